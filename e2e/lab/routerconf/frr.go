package routerconf

import (
	"fmt"
	"net/netip"
	"strings"
)

// FRRProfile is the name of the BFD profile in the rendered FRR config.
const FRRProfile = "herald"

// RenderFRR renders an integrated frr.conf (zebra, bgpd, bfdd) for FRR 8.4,
// to be pushed with `vtysh -b`.
func RenderFRR(c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("frr config: %w", err)
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("frr defaults datacenter")
	w("hostname herald-router")
	w("!")
	w("bfd")
	w(" profile %s", FRRProfile)
	w("  detect-multiplier %d", c.BFD.Multiplier)
	w("  receive-interval %d", c.BFD.ReceiveMS)
	w("  transmit-interval %d", c.BFD.TransmitMS)
	w(" exit")
	w("exit")
	w("!")
	for _, i := range c.Interfaces {
		// bgpd turns RAs on for an interface neighbor by itself (every
		// 10 s); every 3 s here, so a node learns the router quickly
		w("interface %s", i)
		w(" ipv6 nd ra-interval 3")
		w(" no ipv6 nd suppress-ra")
		w("exit")
		w("!")
	}
	w("router bgp %d", c.ASN)
	w(" bgp router-id %s", c.RouterID)
	w(" no bgp ebgp-requires-policy")
	w(" no bgp default ipv4-unicast")
	w(" no bgp network import-check")
	w(" bgp bestpath as-path multipath-relax")
	w(" timers bgp %d %d", c.Keepalive, c.HoldTime)
	groups := frrGroups(c)
	for _, g := range groups {
		frrGroup(w, c, g)
	}
	for _, n := range c.sortedNeighbors() {
		frrNeighbor(w, c, n)
	}
	for _, i := range c.Interfaces {
		frrInterfaceNeighbor(w, c, i)
	}
	for _, af := range []string{"ipv4", "ipv6"} {
		w(" address-family %s unicast", af)
		for _, g := range groups {
			w("  neighbor %s activate", g.name)
		}
		for _, n := range c.sortedNeighbors() {
			w("  neighbor %s activate", n.Address)
		}
		for _, i := range c.Interfaces {
			w("  neighbor %s activate", i)
		}
		w("  maximum-paths %d", c.MaxPaths)
		w("  maximum-paths ibgp %d", c.MaxPaths)
		w(" exit-address-family")
	}
	w("exit")
	w("!")
	return b.String(), nil
}

type frrPeerGroup struct {
	name   string
	ranges []netip.Prefix
}

// frrGroups puts the listen ranges into one peer group per family.
func frrGroups(c Config) []frrPeerGroup {
	var v4, v6 frrPeerGroup
	v4.name, v6.name = "NODES4", "NODES6"
	for _, r := range c.ListenRanges {
		if r.Addr().Is4() {
			v4.ranges = append(v4.ranges, r.Masked())
		} else {
			v6.ranges = append(v6.ranges, r.Masked())
		}
	}
	var out []frrPeerGroup
	for _, g := range []frrPeerGroup{v4, v6} {
		if len(g.ranges) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func frrGroup(w func(string, ...any), c Config, g frrPeerGroup) {
	w(" neighbor %s peer-group", g.name)
	w(" neighbor %s remote-as %d", g.name, c.PeerASN)
	w(" neighbor %s timers %d %d", g.name, c.Keepalive, c.HoldTime)
	if c.ListenRangeBFD {
		w(" neighbor %s bfd profile %s", g.name, FRRProfile)
	}
	for _, r := range g.ranges {
		w(" bgp listen range %s peer-group %s", r, g.name)
	}
}

func frrNeighbor(w func(string, ...any), c Config, n Neighbor) {
	a := n.Address
	w(" neighbor %s remote-as %d", a, c.peerASN(n))
	w(" neighbor %s timers %d %d", a, c.Keepalive, c.HoldTime)
	w(" neighbor %s timers connect 1", a)
	if !n.Active {
		w(" neighbor %s passive", a)
	}
	if n.BFD {
		w(" neighbor %s bfd profile %s", a, FRRProfile)
	}
	if n.Password != "" {
		w(" neighbor %s password %s", a, n.Password)
	}
}

// frrInterfaceNeighbor peers unnumbered on interface i: FRR finds the
// node's link-local address from its Router Advertisements or its
// connection, and negotiates the extended next hop capability.
func frrInterfaceNeighbor(w func(string, ...any), c Config, i string) {
	class := "external"
	if c.ASN == c.PeerASN {
		class = "internal"
	}
	w(" neighbor %s interface remote-as %s", i, class)
	w(" neighbor %s timers %d %d", i, c.Keepalive, c.HoldTime)
	w(" neighbor %s timers connect 1", i)
	if c.InterfaceBFD {
		w(" neighbor %s bfd profile %s", i, FRRProfile)
	}
}
