package lab

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// Route is what the router knows about a prefix: its BGP paths and the
// next hops in its kernel FIB (what traffic really uses).
type Route struct {
	Prefix netip.Prefix
	Paths  []routerconf.Path
	// FIB next hops, sorted by address.
	FIB []NextHop
}

// NextHop is one kernel next hop, with the node it leads to.
type NextHop struct {
	Addr netip.Addr
	Dev  string
	// Node is the node owning Addr (by address or IPv6 link-local), or "".
	Node string
	// Protocol installed the route: "bgp" (FRR), "bird", "static"...
	Protocol string
	// Weight is the kernel's weight of the next hop among those of a
	// multipath route (1 when the kernel shows none).
	Weight int
}

// FIBNodes lists the nodes of the FIB next hops, in next-hop address order.
func (r Route) FIBNodes() []string {
	var out []string
	for _, nh := range r.FIB {
		out = append(out, nh.Node)
	}
	return out
}

// RouterRoutes returns the router's RIB entry for prefix (FRR `show bgp
// ... json`, BIRD `show route ... all`) and the kernel's next hops for it
// in the router namespace. A prefix the router does not know gives a
// Route without paths and next hops, and no error.
func (l *Lab) RouterRoutes(ctx context.Context, prefix netip.Prefix) (Route, error) {
	prefix = prefix.Masked()
	r := Route{Prefix: prefix}
	var entry routerconf.RIBEntry
	var err error
	fam := "ipv4"
	if prefix.Addr().Is6() {
		fam = "ipv6"
	}
	if l.RouterKind() == BIRD {
		var out string
		out, err = l.RouterCLI(ctx, "show route "+prefix.String()+" all")
		if err != nil && strings.Contains(out, "Network not found") {
			err = nil // birdc exits 1 on this reply: the router has no such route (yet)
		}
		if err == nil {
			entry, err = routerconf.ParseBIRDRoute(out, l.birdPeers(ctx))
		}
	} else {
		var out string
		if out, err = l.RouterCLI(ctx, fmt.Sprintf("show bgp %s unicast %s json", fam, prefix)); err == nil {
			entry, err = routerconf.ParseFRRRoute([]byte(out))
		}
	}
	if err != nil {
		return r, fmt.Errorf("router RIB for %s: %w", prefix, err)
	}
	r.Paths = entry.Paths
	if r.FIB, err = l.RouterFIB(ctx, prefix); err != nil {
		return r, err
	}
	return r, nil
}

// birdPeers maps BIRD protocol names to neighbor addresses (BIRD names the
// protocol a route came from, not the peer).
func (l *Lab) birdPeers(ctx context.Context) map[string]netip.Addr {
	peers, err := l.RouterNeighbors(ctx)
	out := map[string]netip.Addr{}
	if err != nil {
		return out
	}
	for _, p := range peers {
		out[p.Name] = p.Address
	}
	return out
}

// RouterFIB reads the kernel's next hops for prefix in the router
// namespace (`ip -j route show PREFIX`, no router CLI: fast enough to
// poll), sorted by address.
func (l *Lab) RouterFIB(ctx context.Context, prefix netip.Prefix) ([]NextHop, error) {
	fam := "-4"
	if prefix.Addr().Is6() {
		fam = "-6"
	}
	out, err := run(ctx, "ip", "-n", l.ns(Router), fam, "-j", "route", "show", prefix.String())
	if err != nil {
		return nil, err
	}
	// IPv6 next hops of IPv4 routes (RFC 8950, unnumbered links) are
	// "via": {"family": "inet6", "host": ...} rather than "gateway".
	type hop struct {
		Gateway, Dev string
		Via          struct{ Host string }
		Weight       int `json:"weight"`
	}
	var routes []struct {
		hop
		Protocol string `json:"protocol"`
		Nexthops []hop  `json:"nexthops"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		return nil, fmt.Errorf("parsing the router's FIB for %s: %w", prefix, err)
	}
	var hops []NextHop
	for _, rt := range routes {
		all := rt.Nexthops
		if len(all) == 0 {
			all = []hop{rt.hop}
		}
		for _, h := range all {
			a, err := netip.ParseAddr(cmp.Or(h.Gateway, h.Via.Host))
			if err != nil {
				continue
			}
			node := cmp.Or(l.nodeOfAddr(a), l.nodeOfUnnumberedIf(h.Dev))
			hops = append(hops, NextHop{Addr: a, Dev: h.Dev, Node: node, Protocol: rt.Protocol, Weight: max(h.Weight, 1)})
		}
	}
	// the kernel's order of ECMP next hops is not stable
	slices.SortFunc(hops, func(a, b NextHop) int { return a.Addr.Compare(b.Addr) })
	return hops, nil
}

// nodeOfAddr names the node with address a (IPv4, IPv6 or link-local).
func (l *Lab) nodeOfAddr(a netip.Addr) string {
	a = a.WithZone("")
	for _, n := range l.nodes {
		if a == n.IPv4 || a == n.IPv6 || a == n.LinkLocal {
			return n.Name
		}
	}
	return ""
}

// RouterNeighbors lists the router's BGP sessions with their state,
// accepted prefixes and BFD state, sorted by address.
func (l *Lab) RouterNeighbors(ctx context.Context) ([]routerconf.Peer, error) {
	if l.RouterKind() == BIRD {
		out, err := l.RouterCLI(ctx, "show protocols all")
		if err != nil {
			return nil, err
		}
		peers, err := routerconf.ParseBIRDProtocols(out)
		if err != nil {
			return nil, err
		}
		if bfd, err := l.RouterCLI(ctx, "show bfd sessions"); err == nil {
			routerconf.ApplyBIRDBFD(peers, bfd)
		}
		return peers, nil
	}
	out, err := l.RouterCLI(ctx, "show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	peers, err := routerconf.ParseFRRNeighbors([]byte(out))
	if err != nil {
		return nil, err
	}
	if bfdOut, err := l.RouterCLI(ctx, "show bfd peers json"); err == nil {
		if bfd, err := routerconf.ParseFRRBFDPeers([]byte(bfdOut)); err == nil {
			for i := range peers {
				b, ok := bfd[peers[i].Address]
				if !ok {
					continue
				}
				if peers[i].BFD == "" {
					peers[i].BFD = b.Status
				}
				peers[i].BFDDetect = b.Detect
			}
		}
	}
	return peers, nil
}
