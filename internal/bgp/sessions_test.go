package bgp

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

var rid = netip.MustParseAddr("198.51.100.11")

func sess(name, peer string, mod ...func(*Session)) Session {
	s := Session{Name: name, PeerAddress: netip.MustParseAddr(peer), MyASN: 64512, PeerASN: 64513}
	for _, m := range mod {
		m(&s)
	}
	return s
}

func norm(t *testing.T, s Session) Session {
	t.Helper()
	n, err := normalize(s)
	if err != nil {
		t.Fatalf("normalize %s: %v", s.Name, err)
	}
	return n
}

func names(ss []Session) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func TestNormalizeDefaults(t *testing.T) {
	n := norm(t, sess("a", "2001:db8::1"))
	if n.PeerPort != 179 || n.HoldTime != 90*time.Second || n.KeepaliveTime != 30*time.Second || n.ConnectTime != 5*time.Second {
		t.Errorf("timers/port defaults: %+v", n)
	}
	if len(n.Families) != 1 || n.Families[0] != IPv6Unicast {
		t.Errorf("families default for an IPv6 peer: %v", n.Families)
	}
	b := norm(t, sess("b", "198.51.100.1", func(s *Session) {
		s.BFD = &BFD{}
		s.Families = []Family{IPv6Unicast, IPv4Unicast, IPv6Unicast}
	}))
	if *b.BFD != (BFD{300 * time.Millisecond, 300 * time.Millisecond, 3}) {
		t.Errorf("bfd defaults: %+v", *b.BFD)
	}
	if len(b.Families) != 2 || b.Families[0] != IPv4Unicast {
		t.Errorf("families sorted and unique: %v", b.Families)
	}
}

func TestNormalizeRefuses(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Session)
		want string
	}{
		{"no address", func(s *Session) { s.PeerAddress = netip.Addr{} }, "peerAddress"},
		{"no asn", func(s *Session) { s.PeerASN = 0 }, "ASN"},
		{"short hold", func(s *Session) { s.HoldTime = 2 * time.Second }, "holdTime"},
		{"fractional hold", func(s *Session) { s.HoldTime = 3500 * time.Millisecond }, "holdTime"},
		{"keepalive above hold", func(s *Session) { s.HoldTime, s.KeepaliveTime = 9*time.Second, 10*time.Second }, "keepaliveTime"},
		{"ipv6 router id", func(s *Session) { s.RouterID = netip.MustParseAddr("2001:db8::1") }, "routerID"},
		{"source family", func(s *Session) { s.SourceAddress = netip.MustParseAddr("2001:db8::2") }, "sourceAddress"},
		{"bfd multiplier", func(s *Session) { s.BFD = &BFD{DetectMultiplier: 1} }, "detectMultiplier"},
		{"bfd interval", func(s *Session) { s.BFD = &BFD{ReceiveInterval: time.Millisecond} }, "bfd interval"},
		{"family", func(s *Session) { s.Families = []Family{7} }, "family"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := normalize(sess("a", "198.51.100.1", c.mod))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error about %q", err, c.want)
			}
		})
	}
}

func TestPlanSessions(t *testing.T) {
	a := sess("a", "198.51.100.1")
	b := sess("b", "198.51.100.2")
	cur := func(ss ...Session) map[string]Session {
		m := map[string]Session{}
		for _, s := range ss {
			m[s.Name] = norm(t, s)
		}
		return m
	}
	with := func(s Session, mod func(*Session)) Session { mod(&s); return s }
	cases := []struct {
		name                      string
		current                   map[string]Session
		desired                   []Session
		add, update, remove, keep string
		refused                   []string
	}{
		{name: "all new", current: cur(), desired: []Session{b, a}, add: "a,b"},
		{name: "unchanged", current: cur(a, b), desired: []Session{a, b}, keep: "a,b"},
		{name: "removed", current: cur(a, b), desired: []Session{a}, keep: "a", remove: "b"},
		{name: "bfd in place", current: cur(a, b), desired: []Session{with(a, func(s *Session) { s.BFD = &BFD{} }), b},
			update: "a", keep: "b"},
		{name: "connect time in place", current: cur(a), desired: []Session{with(a, func(s *Session) { s.ConnectTime = 2 * time.Second })},
			update: "a"},
		{name: "hold time recreates", current: cur(a, b), desired: []Session{with(a, func(s *Session) { s.HoldTime = 9 * time.Second }), b},
			remove: "a", add: "a", keep: "b"},
		{name: "password recreates", current: cur(a), desired: []Session{with(a, func(s *Session) { s.Password = "x" })},
			remove: "a", add: "a"},
		{name: "families recreate", current: cur(a), desired: []Session{with(a, func(s *Session) { s.Families = []Family{IPv4Unicast, IPv6Unicast} })},
			remove: "a", add: "a"},
		{name: "families chosen, the same families, in place", current: cur(a), desired: []Session{with(a, func(s *Session) { s.FamiliesChosen = true })},
			update: "a"},
		{name: "duplicate address: first by name", current: cur(), desired: []Session{with(b, func(s *Session) { s.PeerAddress = a.PeerAddress }), a},
			add: "a", refused: []string{"b"}},
		{name: "duplicate address: configured keeps over earlier name", current: cur(with(b, func(s *Session) { s.PeerAddress = a.PeerAddress })),
			desired: []Session{a, with(b, func(s *Session) { s.PeerAddress = a.PeerAddress })}, keep: "b", refused: []string{"a"}},
		{name: "address moves between sessions", current: cur(a, b),
			desired: []Session{with(a, func(s *Session) { s.PeerAddress = b.PeerAddress }), with(b, func(s *Session) { s.PeerAddress = a.PeerAddress })},
			remove:  "a,b", add: "a,b"},
		{name: "listed twice", current: cur(a), desired: []Session{a, a, b}, add: "b", remove: "a", refused: []string{"a"}},
		{name: "foreign router id", current: cur(), desired: []Session{with(a, func(s *Session) { s.RouterID = netip.MustParseAddr("198.51.100.99") }), b},
			add: "b", refused: []string{"a"}},
		{name: "same router id is fine", current: cur(), desired: []Session{with(a, func(s *Session) { s.RouterID = rid })}, add: "a"},
		{name: "invalid", current: cur(a), desired: []Session{with(a, func(s *Session) { s.MyASN = 0 })}, remove: "a", refused: []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planSessions(c.current, c.desired, rid)
			check := func(what, got, want string) {
				if got != want {
					t.Errorf("%s: got %q, want %q", what, got, want)
				}
			}
			check("add", names(p.add), c.add)
			check("update", names(p.update), c.update)
			check("remove", names(p.remove), c.remove)
			check("keep", names(p.keep), c.keep)
			check("refused", strings.Join(sortedKeys(p.refused), ","), strings.Join(c.refused, ","))
		})
	}
}

func TestPlanSessionsErrorsNameTheConflict(t *testing.T) {
	p := planSessions(map[string]Session{}, []Session{sess("a", "198.51.100.1"), sess("b", "198.51.100.1")}, rid)
	err := p.refused["b"].err
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "198.51.100.1") {
		t.Fatalf("duplicate address error should name the address and the session holding it: %v", err)
	}
	p = planSessions(map[string]Session{}, []Session{sess("a", "198.51.100.1")}, netip.Addr{})
	if p.refused["a"].err != errNoRouterID {
		t.Fatalf("without a router ID: %v", p.refused["a"].err)
	}
}

func TestRouterIDFor(t *testing.T) {
	withID := func(id string) func(*Session) {
		return func(s *Session) { s.RouterID = netip.MustParseAddr(id) }
	}
	cases := []struct {
		name string
		d    Desired
		want string
	}{
		{"node ipv4", Desired{NodeIPv4: rid, Sessions: []Session{sess("a", "198.51.100.1", withID("198.51.100.50"))}}, "198.51.100.11"},
		{"ipv6-only node: first session by name", Desired{NodeIPv6: netip.MustParseAddr("2001:db8::11"), Sessions: []Session{
			sess("b", "2001:db8::1", withID("198.51.100.52")), sess("a", "2001:db8::2", withID("198.51.100.51"))}}, "198.51.100.51"},
		{"nothing", Desired{NodeIPv6: netip.MustParseAddr("2001:db8::11"), Sessions: []Session{sess("a", "2001:db8::1")}}, "invalid IP"},
	}
	for _, c := range cases {
		if got := routerIDFor(c.d).String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}
