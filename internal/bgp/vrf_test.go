package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/herald-lb/herald/test/labkit"
)

var (
	vrfV4 = netip.MustParseAddr("198.51.100.75")
	vrfV6 = netip.MustParseAddr("2001:db8:2::11")
)

func inVRF(v4, v6 netip.Addr) func(*Session) {
	return func(s *Session) { s.VRF, s.NextHopV4, s.NextHopV6 = "red", v4, v6 }
}

func TestPeerConfigBindsToVRF(t *testing.T) {
	p := peerConfig(norm(t, sess("a", "198.51.100.65", inVRF(vrfV4, vrfV6))), false)
	if p.Transport.BindInterface != "red" {
		t.Errorf("bind interface %q, want red", p.Transport.BindInterface)
	}
	if p := peerConfig(norm(t, sess("b", "198.51.100.1")), false); p.Transport.BindInterface != "" {
		t.Errorf("default VRF: bind interface %q", p.Transport.BindInterface)
	}
}

func TestNormalizeVRF(t *testing.T) {
	n := norm(t, sess("a", "198.51.100.1", func(s *Session) { s.NextHopV4 = vrfV4 }))
	if n.NextHopV4.IsValid() {
		t.Errorf("next hops without a VRF must be dropped: %+v", n)
	}
	cases := []struct {
		name string
		mod  func(*Session)
		want string
	}{
		{"unavailable", func(s *Session) { s.Unavailable = "VRF red does not exist on node n1" }, "VRF red does not exist on node n1"},
		{"passive", func(s *Session) { inVRF(vrfV4, vrfV6)(s); s.Passive = true }, "passive session is not supported in a VRF"},
		{"bfd", func(s *Session) { inVRF(vrfV4, vrfV6)(s); s.BFD = &BFD{} }, "BFD is not supported in a VRF"},
		{"v4 next hop of v6", inVRF(vrfV6, vrfV6), "IPv4 next hop 2001:db8:2::11"},
		{"v6 next hop of v4", inVRF(vrfV4, vrfV4), "IPv6 next hop 198.51.100.75"},
	}
	for _, c := range cases {
		if _, err := normalize(sess("a", "198.51.100.1", c.mod)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error about %q", c.name, err, c.want)
		}
	}
}

// TestPlanPathsVRFNextHops: a session in a VRF sends the node's addresses
// in it; the default-VRF sessions keep the node's.
func TestPlanPathsVRFNextHops(t *testing.T) {
	both := func(s *Session) { s.Families = []Family{IPv4Unicast, IPv6Unicast} }
	peer6 := "2001:db8:2::1"
	ss := []Session{
		norm(t, sess("plain", peerA.String(), both)),
		norm(t, sess("red4", "198.51.100.65", both, inVRF(vrfV4, vrfV6))),
		norm(t, sess("red6", peer6, both, inVRF(vrfV4, vrfV6))),
	}
	p := planPaths([]Path{{Prefix: vip4}, {Prefix: vip6}}, ss, nodeV4, nodeV6)
	want := map[netip.Prefix]map[netip.Addr]string{
		vip4: {peerA: "c=[] l=[] lp=- nh=invalid IP", netip.MustParseAddr("198.51.100.65"): "c=[] l=[] lp=- nh=invalid IP",
			netip.MustParseAddr(peer6): "c=[] l=[] lp=- nh=198.51.100.75"},
		vip6: {peerA: "c=[] l=[] lp=- nh=invalid IP", netip.MustParseAddr("198.51.100.65"): "c=[] l=[] lp=- nh=2001:db8:2::11",
			netip.MustParseAddr(peer6): "c=[] l=[] lp=- nh=2001:db8:2::11"},
	}
	for prefix, peers := range want {
		for peer, key := range peers {
			if got := attrsKey(p.deliveries[prefix][peer]); got != key {
				t.Errorf("%s to %s: %s, want %s", prefix, peer, got, key)
			}
		}
	}
	if p.rib[vip6] != nodeV6 {
		t.Errorf("the RIB keeps the node's IPv6 next hop: %s", p.rib[vip6])
	}
}

func TestPlanPathsVRFWithoutAFamily(t *testing.T) {
	both := func(s *Session) { s.Families = []Family{IPv4Unicast, IPv6Unicast} }
	ss := []Session{
		norm(t, sess("v4only", "198.51.100.65", both, inVRF(vrfV4, netip.Addr{}))),
		norm(t, sess("v6only", "2001:db8:2::1", both, inVRF(netip.Addr{}, vrfV6))),
	}
	p := planPaths([]Path{{Prefix: vip4}, {Prefix: vip6}}, ss, nodeV4, nodeV6)
	if w := p.warnings.lines("v4only"); len(w) != 1 || !strings.Contains(w[0], "no global IPv6 address in VRF red") {
		t.Errorf("v4only: %q", w)
	}
	if w := p.warnings.lines("v6only"); len(w) != 1 || !strings.Contains(w[0], "no IPv4 address in VRF red") {
		t.Errorf("v6only: %q", w)
	}
	if _, ok := p.deliveries[vip6][netip.MustParseAddr("198.51.100.65")]; ok {
		t.Error("v4only got an IPv6 path without a next hop")
	}
}

// TestVRFNextHopChangeUpdatesInPlace: the VRF's addresses changing is a
// policy change, not a new neighbor; the VRF changing is.
func TestVRFNextHopChangeUpdatesInPlace(t *testing.T) {
	cur := norm(t, sess("a", "198.51.100.65", inVRF(vrfV4, vrfV6)))
	moved := norm(t, sess("a", "198.51.100.65", inVRF(netip.MustParseAddr("198.51.100.76"), vrfV6)))
	if needsRecreate(cur, moved) {
		t.Error("a next hop change must not recreate the neighbor")
	}
	other := norm(t, sess("a", "198.51.100.65", inVRF(vrfV4, vrfV6), func(s *Session) { s.VRF = "blue" }))
	if !needsRecreate(cur, other) {
		t.Error("another VRF must recreate the neighbor")
	}
	plan := planSessions(map[string]Session{"a": cur}, []Session{moved}, rid)
	if len(plan.update) != 1 || len(plan.add)+len(plan.remove) != 0 {
		t.Errorf("plan: update %s add %s remove %s", names(plan.update), names(plan.add), names(plan.remove))
	}
}

func TestPlanSessionsRefusesUnavailable(t *testing.T) {
	gone := sess("gone", "198.51.100.65", func(s *Session) { s.VRF = "green"; s.Unavailable = "VRF green does not exist on node n1" })
	plan := planSessions(map[string]Session{}, []Session{gone, sess("ok", "198.51.100.1")}, rid)
	if names(plan.add) != "ok" {
		t.Errorf("added %s, want ok alone", names(plan.add))
	}
	if r, ok := plan.refused["gone"]; !ok || r.err.Error() != "VRF green does not exist on node n1" {
		t.Errorf("refused: %+v", plan.refused)
	}
}

// TestLoopbackVRFSession: a session bound to a device (lo stands in for a
// VRF device: GoBGP sets SO_BINDTODEVICE the same way) comes up, and the
// router receives the session's VRF IPv6 address as the IPv6 next hop
// while an IPv4 path carries the session's local address; a session in
// the default VRF keeps the node's IPv6 address.
func TestLoopbackVRFSession(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	r2 := startRouter(t, "127.0.0.4", routerASN, loSpeaker, speakerASN)
	s, _ := newTestSpeaker(t, nil)
	inLo := loSession("r1", r1, routerASN)
	inLo.VRF, inLo.NextHopV4, inLo.NextHopV6 = "lo", loSpeaker, vrfV6
	apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{inLo, loSession("r2", r2, routerASN)},
		Paths:    []Path{{Prefix: vip4}, {Prefix: vip6}}})
	waitUp(t, s, "r1", "r2")
	waitRoutes(t, r1, "r1: VRF next hops", func(rs map[netip.Prefix]route) bool {
		return rs[vip4].nextHop == loSpeaker && rs[vip6].nextHop == vrfV6
	})
	waitRoutes(t, r2, "r2: the node's next hops", func(rs map[netip.Prefix]route) bool {
		return rs[vip4].nextHop == loSpeaker && rs[vip6].nextHop == loNodeV6
	})
	// the VRF's address changes: new next hop, same session
	inLo.NextHopV6 = netip.MustParseAddr("2001:db8:3::12")
	apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{inLo, loSession("r2", r2, routerASN)},
		Paths:    []Path{{Prefix: vip4}, {Prefix: vip6}}})
	waitRoutes(t, r1, "r1: the VRF's new IPv6 address", func(rs map[netip.Prefix]route) bool {
		return rs[vip6].nextHop == inLo.NextHopV6
	})
	if n := r1.establishedCount(); n != 1 {
		t.Errorf("a next hop change reset the session: established %d times", n)
	}
	// the binding is real: a session bound to a device that does not
	// exist never connects
	r3 := startRouter(t, "127.0.0.5", routerASN, loSpeaker, speakerASN)
	gone := loSession("r3", r3, routerASN)
	gone.VRF, gone.NextHopV4 = "herald-nodev", loSpeaker
	apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{inLo, loSession("r2", r2, routerASN), gone},
		Paths:    []Path{{Prefix: vip4}, {Prefix: vip6}}})
	labkit.EventuallyWhy(t, waitLong, "r3's connect error", func() (bool, string) {
		st := sessionNamed(t, s, "r3")
		return strings.Contains(st.LastError, "no such device"), fmt.Sprintf("%s %q", st.State, st.LastError)
	})
	if n := r3.establishedCount(); n != 0 {
		t.Errorf("a session bound to a missing device came up %d times", n)
	}
}
