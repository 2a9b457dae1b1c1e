package bgp

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

var (
	nodeV4 = netip.MustParseAddr("198.51.100.11")
	nodeV6 = netip.MustParseAddr("2001:db8:1::11")
	peerA  = netip.MustParseAddr("198.51.100.1")
	peerB  = netip.MustParseAddr("198.51.100.2")
	peerC6 = netip.MustParseAddr("2001:db8:1::1")
	vip4   = netip.MustParsePrefix("198.51.100.130/32")
	vip4b  = netip.MustParsePrefix("198.51.100.131/32")
	vip6   = netip.MustParsePrefix("2001:db8:ff::10/128")
)

func u32(v uint32) *uint32 { return &v }

// threeSessions: a (eBGP, v4+v6), b (iBGP, v4 only), c (eBGP over IPv6, v4+v6).
func threeSessions(t *testing.T) []Session {
	both := []Family{IPv4Unicast, IPv6Unicast}
	return []Session{
		norm(t, sess("a", peerA.String(), func(s *Session) { s.Families = both })),
		norm(t, sess("b", peerB.String(), func(s *Session) { s.PeerASN = s.MyASN })),
		norm(t, sess("c", peerC6.String(), func(s *Session) { s.Families = both })),
	}
}

func TestPlanPathsDelivery(t *testing.T) {
	ss := threeSessions(t)
	cases := []struct {
		name  string
		paths []Path
		want  map[netip.Prefix]map[netip.Addr]string // prefix → peer → attrsKey
	}{
		{"to all sessions", []Path{{Prefix: vip4}}, map[netip.Prefix]map[netip.Addr]string{
			vip4: {peerA: "c=[] l=[] lp=- nh=invalid IP", peerB: "c=[] l=[] lp=- nh=invalid IP", peerC6: "c=[] l=[] lp=- nh=198.51.100.11"},
		}},
		{"ipv6 only where carried", []Path{{Prefix: vip6}}, map[netip.Prefix]map[netip.Addr]string{
			vip6: {peerA: "c=[] l=[] lp=- nh=invalid IP", peerC6: "c=[] l=[] lp=- nh=invalid IP"},
		}},
		{"named peers only", []Path{{Prefix: vip4, Peers: []string{"b", "nope"}}}, map[netip.Prefix]map[netip.Addr]string{
			vip4: {peerB: "c=[] l=[] lp=- nh=invalid IP"},
		}},
		{"per-peer communities for one prefix", []Path{
			{Prefix: vip4, Peers: []string{"a"}, Communities: []uint32{64512<<16 | 1}},
			{Prefix: vip4, Peers: []string{"b"}, Communities: []uint32{64512<<16 | 2}, LargeCommunities: [][3]uint32{{64512, 1, 2}}},
		}, map[netip.Prefix]map[netip.Addr]string{
			vip4: {peerA: "c=[4227858433] l=[] lp=- nh=invalid IP", peerB: "c=[4227858434] l=[[64512 1 2]] lp=- nh=invalid IP"},
		}},
		{"merged for one peer", []Path{
			{Prefix: vip4, Peers: []string{"b"}, Communities: []uint32{3, 1}},
			{Prefix: vip4, Peers: []string{"b"}, Communities: []uint32{2, 1}, LocalPref: u32(100)},
			{Prefix: vip4, Peers: []string{"b"}, LocalPref: u32(200)},
		}, map[netip.Prefix]map[netip.Addr]string{
			vip4: {peerB: "c=[1 2 3] l=[] lp=200 nh=invalid IP"},
		}},
		{"local pref kept off eBGP", []Path{{Prefix: vip4, Peers: []string{"a", "b"}, LocalPref: u32(150)}},
			map[netip.Prefix]map[netip.Addr]string{
				vip4: {peerA: "c=[] l=[] lp=- nh=invalid IP", peerB: "c=[] l=[] lp=150 nh=invalid IP"},
			}},
		{"host bits masked", []Path{{Prefix: netip.MustParsePrefix("198.51.100.133/30"), Peers: []string{"a"}}},
			map[netip.Prefix]map[netip.Addr]string{
				netip.MustParsePrefix("198.51.100.132/30"): {peerA: "c=[] l=[] lp=- nh=invalid IP"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planPaths(c.paths, ss, nodeV4, nodeV6)
			if len(p.errs) > 0 {
				t.Fatalf("errors: %v", p.errs)
			}
			got := map[netip.Prefix]map[netip.Addr]string{}
			for pfx, d := range p.deliveries {
				got[pfx] = map[netip.Addr]string{}
				for a, at := range d {
					got[pfx][a] = attrsKey(at)
				}
			}
			if !equalNested(got, c.want) {
				t.Errorf("deliveries:\n got %v\nwant %v", got, c.want)
			}
			for pfx := range c.want {
				if _, ok := p.rib[pfx]; !ok {
					t.Errorf("%s not in the RIB", pfx)
				}
			}
		})
	}
}

func equalNested(a, b map[netip.Prefix]map[netip.Addr]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || len(av) != len(bv) {
			return false
		}
		for k2, v := range av {
			if bv[k2] != v {
				return false
			}
		}
	}
	return true
}

func TestPlanPathsNextHops(t *testing.T) {
	ss := threeSessions(t)
	p := planPaths([]Path{{Prefix: vip4}, {Prefix: vip6}}, ss, nodeV4, nodeV6)
	if nh := p.rib[vip4]; !nh.IsUnspecified() || !nh.Is4() {
		t.Errorf("IPv4 RIB next hop must be 0.0.0.0 (next-hop-self), got %s", nh)
	}
	if nh := p.rib[vip6]; nh != nodeV6 {
		t.Errorf("IPv6 RIB next hop must be the node's IPv6 address, got %s", nh)
	}
	p = planPaths([]Path{{Prefix: vip4}, {Prefix: vip6}}, ss, nodeV4, netip.MustParseAddr("fe80::1"))
	if len(p.errs) != 1 || !strings.Contains(p.errs[0].Error(), "no IPv6 next hop") {
		t.Errorf("an IPv6 path without a global node IPv6 must be an error: %v", p.errs)
	}
	if _, ok := p.rib[vip6]; ok {
		t.Error("the IPv6 path must not be in the RIB without a next hop")
	}
	p = planPaths([]Path{{Prefix: netip.Prefix{}}}, ss, nodeV4, nodeV6)
	if len(p.errs) != 1 {
		t.Errorf("invalid prefix: %v", p.errs)
	}
}

func TestPlanPathsWarnings(t *testing.T) {
	ss := threeSessions(t)
	var paths []Path
	for i := range 5 {
		paths = append(paths, Path{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(130 + i)}), 32), LocalPref: u32(200)})
	}
	paths = append(paths, Path{Prefix: vip6, Peers: []string{"b"}},
		Path{Prefix: vip4, Peers: []string{"b"}, LocalPref: u32(300)})
	p := planPaths(paths, ss, netip.Addr{}, nodeV6)
	a := p.warnings.lines("a")
	if len(a) != 1 || !strings.Contains(a[0], "localPref 200 is not sent") || !strings.Contains(a[0], "and 2 more") {
		t.Errorf("session a (eBGP) warnings: %q", a)
	}
	b := p.warnings.lines("b")
	if len(b) != 2 || !strings.Contains(b[0], "disagree on localPref") || !strings.Contains(b[1], "does not carry ipv6-unicast") {
		t.Errorf("session b warnings: %q", b)
	}
	c := p.warnings.lines("c")
	if len(c) != 1 || !strings.Contains(c[0], "no IPv4 next hop for an IPv6 session") {
		t.Errorf("session c warnings: %q", c)
	}
}

// TestPlanPathsChosenFamilies: a session whose families were chosen for it
// gets only paths of those families, and no warning for the others; the
// same session without the choice warns.
func TestPlanPathsChosenFamilies(t *testing.T) {
	v6only := func(chosen bool) Session {
		return norm(t, sess("a", peerA.String(), func(s *Session) { s.Families, s.FamiliesChosen = []Family{IPv6Unicast}, chosen }))
	}
	paths := []Path{{Prefix: vip4}, {Prefix: vip6}}
	p := planPaths(paths, []Session{v6only(true)}, netip.MustParseAddr("198.51.100.11"), nodeV6)
	if _, ok := p.deliveries[vip4][peerA]; ok {
		t.Errorf("an IPv6-only session gets %s", vip4)
	}
	if a, ok := p.deliveries[vip6][peerA]; !ok || a.nextHop.IsValid() {
		t.Errorf("%s to an IPv6-only IPv4 session: %+v %v, want the RIB's next hop (the node's IPv6)", vip6, a, ok)
	}
	if w := p.warnings.lines("a"); len(w) != 0 {
		t.Errorf("chosen families warn: %q", w)
	}
	if w := planPaths(paths, []Session{v6only(false)}, netip.Addr{}, nodeV6).warnings.lines("a"); len(w) != 1 || !strings.Contains(w[0], "does not carry ipv4-unicast") {
		t.Errorf("families not chosen: warnings %q", w)
	}
}

func TestDiffPaths(t *testing.T) {
	unspec := netip.IPv4Unspecified()
	oldRib := map[netip.Prefix]netip.Addr{vip4: unspec, vip4b: unspec, vip6: nodeV6}
	newRib := map[netip.Prefix]netip.Addr{vip4: unspec, vip6: netip.MustParseAddr("2001:db8:1::12"),
		netip.MustParsePrefix("198.51.100.140/32"): unspec}
	comm := attrs{communities: []uint32{1}}
	oldDel := map[netip.Prefix]delivery{
		vip4:  {peerA: {}, peerB: {}},
		vip4b: {peerA: {}},
		vip6:  {peerA: {}},
	}
	newDel := map[netip.Prefix]delivery{
		vip4: {peerA: comm, peerC6: {}}, // a: new attrs, b: lost, c: gained
		vip6: {peerA: {}},
		netip.MustParsePrefix("198.51.100.140/32"): {peerB: {}},
	}
	d := diffPaths(oldRib, newRib, oldDel, newDel)
	if got := prefixList(d.withdraw); got != "198.51.100.131/32" {
		t.Errorf("withdraw: %s", got)
	}
	if got := prefixList(d.announce); got != "198.51.100.140/32,2001:db8:ff::10/128" {
		t.Errorf("announce (new, and next hop changed): %s", got)
	}
	want := []netip.Addr{peerA, peerB, peerC6}
	if !slices.Equal(d.refresh, want) {
		t.Errorf("refresh: %v, want %v", d.refresh, want)
	}
	same := diffPaths(newRib, newRib, newDel, newDel)
	if len(same.withdraw)+len(same.announce)+len(same.refresh) != 0 {
		t.Errorf("no change must give an empty diff: %+v", same)
	}
}

func prefixList(ps []netip.Prefix) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}
