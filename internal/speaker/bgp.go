package speaker

import (
	"net/netip"
	"slices"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/config"
)

// desiredBGP turns this node's BGP decision into the backend's desired
// state. Both address families ride on every session when the pools hold
// both (MP-BGP), unless the peer names its families.
func desiredBGP(res announce.BGPResult, cfg *config.Config, v4, v6 netip.Addr) bgp.Desired {
	d := bgp.Desired{NodeIPv4: v4, NodeIPv6: v6}
	fams := families(cfg)
	for _, p := range res.Peers {
		s := bgp.Session{
			Name: p.Name, PeerAddress: p.Address, Interface: p.Interface, PeerPort: p.Port, MyASN: p.MyASN, PeerASN: p.PeerASN,
			SourceAddress: p.SourceAddress, RouterID: p.RouterID,
			HoldTime: p.HoldTime, KeepaliveTime: p.KeepaliveTime, ConnectTime: p.ConnectTime,
			EBGPMultiHop: p.EBGPMultiHop, Password: p.Password, GracefulRestart: p.GracefulRestart,
			Families: fams, DynamicASN: asnClass(p.DynamicASN), Passive: p.Passive, VRF: p.VRF,
		}
		if len(p.AddressFamilies) > 0 {
			s.Families, s.FamiliesChosen = peerFamilies(p.AddressFamilies), true
		}
		if p.BFD != nil {
			s.BFD = &bgp.BFD{ReceiveInterval: p.BFD.ReceiveInterval, TransmitInterval: p.BFD.TransmitInterval, DetectMultiplier: p.BFD.DetectMultiplier}
		}
		d.Sessions = append(d.Sessions, s)
	}
	d.Paths = appendPaths(d.Paths, res.Routes)
	return d
}

func asnClass(c config.DynamicASN) bgp.ASNClass {
	switch c {
	case config.DynamicInternal:
		return bgp.AnyInternal
	case config.DynamicExternal:
		return bgp.AnyExternal
	}
	return bgp.FixedASN
}

// bgpChange is the change set handed to the BGP backend: with all, the
// whole desired state of res; else the memo's last change alone.
func bgpChange(m *announce.BGPMemo, all bool, res announce.BGPResult, cfg *config.Config, v4, v6 netip.Addr) bgp.Change {
	if all {
		return bgp.Change{All: true, Desired: desiredBGP(res, cfg, v4, v6)}
	}
	return bgp.Change{Paths: changedPaths(m)}
}

// changedPaths is the memo's last change in the backend's terms: the
// changed prefixes and all their routes.
func changedPaths(m *announce.BGPMemo) bgp.PathChange {
	c := bgp.PathChange{Prefixes: m.Changes().Prefixes}
	for _, p := range c.Prefixes {
		c.Paths = appendPaths(c.Paths, m.PrefixRoutes(p))
	}
	return c
}

func appendPaths(paths []bgp.Path, routes []announce.Route) []bgp.Path {
	for _, r := range routes {
		paths = append(paths, bgp.Path{
			Prefix: r.Prefix, Peers: r.Peers, Communities: r.Communities,
			LargeCommunities: r.LargeCommunities, LocalPref: r.LocalPref, Weight: r.Weight,
		})
	}
	return paths
}

// families: the address families of the configured pools (IPv4 when there
// is no pool yet, so a session comes up).
func families(cfg *config.Config) []bgp.Family {
	var v4, v6 bool
	for _, name := range cfg.PoolNames() {
		v4 = v4 || cfg.Pools[name].HasFamily(true)
		v6 = v6 || cfg.Pools[name].HasFamily(false)
	}
	var out []bgp.Family
	if v4 || !v6 {
		out = append(out, bgp.IPv4Unicast)
	}
	if v6 {
		out = append(out, bgp.IPv6Unicast)
	}
	return out
}

// advertisedRoutes maps each Service to the routes (prefix and peers) this
// node advertises for it, for events.
func advertisedRoutes(res announce.BGPResult) map[string][]string {
	out := map[string][]string{}
	for _, r := range res.Routes {
		desc := routeDesc(r)
		for _, s := range r.Services {
			out[s] = append(out[s], desc)
		}
	}
	for s := range out {
		slices.Sort(out[s])
	}
	return out
}

// changedAdvertisements is advertisedRoutes for the Services whose routes
// the memo's last change may have changed (the others keep theirs): the
// changed Services and those of the changed prefixes' routes. A Service
// with no route maps to nil.
func changedAdvertisements(m *announce.BGPMemo) map[string][]string {
	ch := m.Changes()
	out := map[string][]string{}
	for _, key := range ch.Services {
		out[key] = nil
	}
	for _, p := range ch.Prefixes {
		for _, r := range m.PrefixRoutes(p) {
			for _, key := range r.Services {
				out[key] = nil
			}
		}
	}
	for key := range out {
		for _, r := range m.ServiceRoutes(key) {
			out[key] = append(out[key], routeDesc(r))
		}
		slices.Sort(out[key])
	}
	return out
}

func routeDesc(r announce.Route) string { return r.Prefix.String() + " to " + joinNames(r.Peers) }

// peerFamilies maps a BGPPeer's spec.addressFamilies (checked, "IPv4" and
// "IPv6") to the backend's families.
func peerFamilies(names []string) []bgp.Family {
	var out []bgp.Family
	for _, n := range names {
		if n == "IPv6" {
			out = append(out, bgp.IPv6Unicast)
		} else {
			out = append(out, bgp.IPv4Unicast)
		}
	}
	return out
}
