package routerconf

import (
	"fmt"
	"strings"
)

// BIRD dynamic protocol name prefixes: sessions from the IPv4 listen
// ranges are named dyn4_1, dyn4_2..., from the IPv6 ones dyn6_1...
const (
	BIRDDynamic4 = "dyn4_"
	BIRDDynamic6 = "dyn6_"
)

// RenderBIRD renders bird.conf for BIRD 2.0: the same sessions as
// RenderFRR, with ECMP into the kernel through `merge paths on`.
func RenderBIRD(c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("bird config: %w", err)
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("router id %s;", c.RouterID)
	if c.LogFile != "" {
		w("log %q all;", c.LogFile)
	}
	w("timeformat protocol iso long;")
	w("timeformat route iso long;")
	w("protocol device { }")
	for _, af := range []string{"4", "6"} {
		w("protocol kernel k%s { ipv%s { import none; export all; }; merge paths on limit %d; }", af, af, c.MaxPaths)
	}
	if c.anyBFD() {
		w("protocol bfd {")
		w("  interface \"*\" { min rx interval %d ms; min tx interval %d ms; multiplier %d; };", c.BFD.ReceiveMS, c.BFD.TransmitMS, c.BFD.Multiplier)
		w("}")
	}
	w("template bgp nodes {")
	w("  local as %d;", c.ASN)
	w("  hold time %d;", c.HoldTime)
	w("  keepalive time %d;", c.Keepalive)
	w("  connect retry time 1;")
	w("  ipv4 { import all; export none; gateway direct; };")
	w("  ipv6 { import all; export none; gateway direct; };")
	w("}")
	n4, n6 := 0, 0
	for _, r := range c.ListenRanges {
		name, dyn := fmt.Sprintf("range4_%d", n4), BIRDDynamic4
		if r.Addr().Is4() {
			n4++
		} else {
			name, dyn = fmt.Sprintf("range6_%d", n6), BIRDDynamic6
			n6++
		}
		w("protocol bgp %s from nodes {", name)
		w("  neighbor range %s as %d;", r.Masked(), c.PeerASN)
		w("  dynamic name %q;", dyn)
		w("  passive on;")
		if c.ListenRangeBFD {
			w("  bfd on;")
		}
		w("}")
	}
	for _, n := range c.sortedNeighbors() {
		birdNeighbor(w, c, n)
	}
	return b.String(), nil
}

// BIRDStaticName is the protocol name of a static neighbor.
func BIRDStaticName(n Neighbor) string {
	r := strings.NewReplacer(".", "_", ":", "_")
	return "static_" + r.Replace(n.Address.String())
}

func birdNeighbor(w func(string, ...any), c Config, n Neighbor) {
	w("protocol bgp %s from nodes {", BIRDStaticName(n))
	w("  neighbor %s as %d;", n.Address, c.peerASN(n))
	if !n.Active {
		w("  passive on;")
	}
	if n.BFD {
		w("  bfd on;")
	}
	if n.Password != "" {
		w("  password %q;", n.Password)
	}
	w("}")
}
