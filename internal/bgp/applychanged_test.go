package bgp

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/protobuf/proto"
)

// idleSessions are three sessions that never come up (nothing listens on
// port 9): a (eBGP, both families), b (iBGP, IPv4 only) and c (eBGP over
// IPv6, both families: IPv4 paths need a next hop).
func idleSessions() []Session {
	both := []Family{IPv4Unicast, IPv6Unicast}
	return []Session{
		{Name: "a", PeerAddress: netip.MustParseAddr("127.0.0.5"), PeerPort: 9, MyASN: 64512, PeerASN: 64513, ConnectTime: time.Minute, Families: both},
		{Name: "b", PeerAddress: netip.MustParseAddr("127.0.0.6"), PeerPort: 9, MyASN: 64512, PeerASN: 64512, ConnectTime: time.Minute, Families: []Family{IPv4Unicast}},
		{Name: "c", PeerAddress: netip.MustParseAddr("::1"), PeerPort: 9, MyASN: 64512, PeerASN: 64513, ConnectTime: time.Minute, Families: both},
	}
}

// randomPaths are 0 to 2 paths for one prefix. Mostly they are those of
// one of three advertisements, as a cluster's Services share a few; now
// and then they have random peers (one of them unknown), communities and
// LOCAL_PREF, a delivery the policy may not have yet.
func randomPaths(r *rand.Rand, p netip.Prefix) []Path {
	if r.IntN(5) > 0 {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []Path{{Prefix: p}}
		case 2:
			return []Path{{Prefix: p, Peers: []string{"a"}, Communities: []uint32{c100}}}
		default:
			return []Path{{Prefix: p, Peers: []string{"b", "c"}, LocalPref: u32(200)}, {Prefix: p, Peers: []string{"a"}}}
		}
	}
	var out []Path
	for range r.IntN(3) {
		path := Path{Prefix: p}
		for _, n := range []string{"a", "b", "c", "x"} {
			if r.IntN(3) == 0 {
				path.Peers = append(path.Peers, n)
			}
		}
		if r.IntN(2) == 0 {
			path.Communities = []uint32{[]uint32{c100, c200}[r.IntN(2)]}
		}
		if r.IntN(4) == 0 {
			path.LocalPref = u32(uint32(100 * (1 + r.IntN(2))))
		}
		out = append(out, path)
	}
	return out
}

// TestApplyPathsEqualsApply changes a few prefixes at a time, 300 times:
// one speaker applies each change alone (ApplyChange of the changed
// prefixes; now and then with nothing to build on, when it applies
// everything), another the whole desired state (Apply). At every step their RIBs, deliveries and
// warnings must be equal, and the export policy installed in the first
// one's GoBGP, evaluated for every prefix and peer, must accept exactly
// the deliveries with exactly their attributes.
func TestApplyPathsEqualsApply(t *testing.T) {
	ctx := context.Background()
	inc, _ := newTestSpeaker(t, nil)
	full, _ := newTestSpeaker(t, nil)
	var pool []netip.Prefix
	for i := range 16 {
		pool = append(pool, netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(128 + i)}), 32))
	}
	for i := range 8 {
		pool = append(pool, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0xff, 15: byte(i)}), 128))
	}
	r := rand.New(rand.NewPCG(1, 2))
	want := map[netip.Prefix][]Path{}
	for _, p := range pool[:8] {
		want[p] = randomPaths(r, p)
	}
	desired := func() Desired {
		d := Desired{NodeIPv4: nodeV4, NodeIPv6: nodeV6, Sessions: idleSessions()}
		for _, p := range slices.SortedFunc(maps.Keys(want), comparePrefix) {
			d.Paths = append(d.Paths, want[p]...)
		}
		return d
	}
	must(t, inc.ApplyChange(ctx, Change{All: true, Desired: desired()}))
	rebuilds, edits, wholes := 0, 0, 0
	for step := range 300 {
		var c PathChange
		for range 1 + r.IntN(4) {
			p := pool[r.IntN(len(pool))]
			want[p] = randomPaths(r, p)
			c.Prefixes = append(c.Prefixes, p)
		}
		for _, p := range c.Prefixes {
			c.Paths = append(c.Paths, want[p]...)
		}
		plan := planPaths(c.Paths, inc.last.sessions, inc.last.nodeV4, inc.last.nodeV6)
		switch _, e, rebuild := inc.diffChanged(changedPrefixes(c), plan, false); {
		case r.IntN(20) == 0:
			// Nothing to build on (as after a refused Apply or the
			// server's restart): everything changed.
			inc.pathsOnly = false
			wholes++
		case rebuild:
			rebuilds++
		case len(e) > 0:
			edits++
		}
		must(t, inc.ApplyChange(ctx, Change{Paths: c}))
		must(t, full.Apply(ctx, desired()))
		if why := sameApplied(ctx, inc, full, pool); why != "" {
			t.Fatalf("step %d (%v): %s", step, c.Prefixes, why)
		}
	}
	t.Logf("300 changes: %d edited the prefix sets, %d installed the policy again, %d applied everything", edits, rebuilds, wholes)
	if rebuilds == 0 || edits < 100 || wholes == 0 {
		t.Errorf("the steps must exercise every way: %d edits, %d rebuilds, %d whole", edits, rebuilds, wholes)
	}
	// A whole Apply after the changes finds nothing to do on the RIB.
	before := maps.Clone(inc.rib)
	must(t, inc.Apply(ctx, desired()))
	if !maps.Equal(before, inc.rib) {
		t.Error("a whole Apply after ApplyPaths changed the RIB")
	}
	if why := sameApplied(ctx, inc, full, pool); why != "" {
		t.Fatalf("after a whole Apply: %s", why)
	}
}

// sameApplied compares what two speakers applied, and the first one's
// installed export policy with the deliveries; "" when all agree.
func sameApplied(ctx context.Context, a, b *Speaker, pool []netip.Prefix) string {
	if !maps.Equal(a.rib, b.rib) {
		return fmt.Sprintf("RIB %v, want %v", a.rib, b.rib)
	}
	if !reflect.DeepEqual(a.deliveries, b.deliveries) {
		return fmt.Sprintf("deliveries %v, want %v", a.deliveries, b.deliveries)
	}
	for _, ss := range idleSessions() {
		if got, want := a.warns.lines(ss.Name), b.warns.lines(ss.Name); !slices.Equal(got, want) {
			return fmt.Sprintf("session %s warnings %q, want %q", ss.Name, got, want)
		}
		if got, want := sessionWarnings(a, ss.Name), sessionWarnings(b, ss.Name); !slices.Equal(got, want) {
			return fmt.Sprintf("session %s reports warnings %q, want %q", ss.Name, got, want)
		}
	}
	eval, err := installedExport(ctx, a.srv)
	if err != nil {
		return err.Error()
	}
	for _, p := range pool {
		for _, ss := range idleSessions() {
			got := eval(p, ss.PeerAddress)
			var want *api.Actions
			if at, ok := b.deliveries[p][ss.PeerAddress]; ok {
				want = attrActions(at)
			}
			if !proto.Equal(got, want) {
				return fmt.Sprintf("installed policy gives %s for %s: %v, want %v", p, ss.PeerAddress, got, want)
			}
		}
	}
	return ""
}

func sessionWarnings(s *Speaker, name string) []string {
	st, _ := findSession(s, name)
	return st.Warnings
}

// installedExport reads the export policy and its sets back from GoBGP
// and returns its decision for a prefix and a peer: the actions of the
// first statement that matches both, nil when none does (rejected).
func installedExport(ctx context.Context, g *gobgp) (func(netip.Prefix, netip.Addr) *api.Actions, error) {
	prefixes := map[string]map[netip.Prefix]bool{}
	neighbors := map[string]map[netip.Addr]bool{}
	err := g.srv.ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX}, func(ds *api.DefinedSet) {
		prefixes[ds.Name] = map[netip.Prefix]bool{}
		for _, p := range ds.Prefixes {
			prefixes[ds.Name][netip.MustParsePrefix(p.IpPrefix)] = true
		}
	})
	if err != nil {
		return nil, err
	}
	err = g.srv.ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR}, func(ds *api.DefinedSet) {
		neighbors[ds.Name] = map[netip.Addr]bool{}
		for _, a := range ds.List {
			if pfx, err := netip.ParsePrefix(a); err == nil {
				neighbors[ds.Name][pfx.Addr()] = true
			} else {
				neighbors[ds.Name][netip.MustParseAddr(a)] = true
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var statements []*api.Statement
	err = g.srv.ListPolicy(ctx, &api.ListPolicyRequest{Name: exportPolicyName}, func(p *api.Policy) { statements = p.Statements })
	if err != nil {
		return nil, err
	}
	return func(p netip.Prefix, a netip.Addr) *api.Actions {
		for _, st := range statements {
			c := st.GetConditions()
			if prefixes[c.GetPrefixSet().GetName()][p] && neighbors[c.GetNeighborSet().GetName()][a] {
				return st.Actions
			}
		}
		return nil
	}, nil
}

// TestLoopbackApplyPaths changes paths alone over established sessions to
// an eBGP (r1) and an iBGP (r2) router: a prefix put into an existing
// prefix set, one moved to another set (new attributes for a route the
// routers have: they must be refreshed), one moved into a set another
// change emptied, a withdrawal, and one that needs a set the policy does
// not have (the policy is installed again). No session is reset.
func TestLoopbackApplyPaths(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	r2 := startRouter(t, "127.0.0.4", speakerASN, loSpeaker, speakerASN)
	s, _ := newTestSpeaker(t, nil)
	vip4c := netip.MustParsePrefix("198.51.100.132/32")
	vip4d := netip.MustParsePrefix("198.51.100.133/32")
	apply(t, s, Desired{
		NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{loSession("r1", r1, routerASN), loSession("r2", r2, speakerASN)},
		Paths: []Path{
			{Prefix: vip4, Communities: []uint32{c100}},
			{Prefix: vip4b, Peers: []string{"r2"}},
			{Prefix: vip6},
			{Prefix: vip4d, Communities: []uint32{c200}},
		},
	})
	waitUp(t, s, "r1", "r2")
	waitRoutes(t, r2, "r2 has its four routes", func(rs map[netip.Prefix]route) bool { return len(rs) == 4 })

	steps := []struct {
		what    string
		change  PathChange
		rebuild bool
		r1, r2  map[netip.Prefix][]uint32 // prefix → communities
	}{
		{"vip4c into r2's set", PathChange{Paths: []Path{{Prefix: vip4c, Peers: []string{"r2"}}}}, false,
			map[netip.Prefix][]uint32{vip4: {c100}, vip6: nil, vip4d: {c200}},
			map[netip.Prefix][]uint32{vip4: {c100}, vip4b: nil, vip6: nil, vip4d: {c200}, vip4c: nil}},
		{"vip4 to the community 200 set", PathChange{Paths: []Path{{Prefix: vip4, Communities: []uint32{c200}}}}, false,
			map[netip.Prefix][]uint32{vip4: {c200}, vip6: nil, vip4d: {c200}},
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: nil, vip6: nil, vip4d: {c200}, vip4c: nil}},
		{"vip4b to the emptied community 100 set", PathChange{Paths: []Path{{Prefix: vip4b, Communities: []uint32{c100}}}}, false,
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip6: nil, vip4d: {c200}},
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip6: nil, vip4d: {c200}, vip4c: nil}},
		{"vip6 withdrawn", PathChange{Prefixes: []netip.Prefix{vip6}}, false,
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip4d: {c200}},
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip4d: {c200}, vip4c: nil}},
		{"vip4c to every peer: no IPv4 set for that delivery", PathChange{Paths: []Path{{Prefix: vip4c}}}, true,
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip4d: {c200}, vip4c: nil},
			map[netip.Prefix][]uint32{vip4: {c200}, vip4b: {c100}, vip4d: {c200}, vip4c: nil}},
	}
	for _, st := range steps {
		plan := planPaths(st.change.Paths, s.last.sessions, s.last.nodeV4, s.last.nodeV6)
		if _, _, rebuild := s.diffChanged(changedPrefixes(st.change), plan, false); rebuild != st.rebuild {
			t.Fatalf("%s: installs the policy again: %t, want %t", st.what, rebuild, st.rebuild)
		}
		must(t, s.ApplyPaths(context.Background(), st.change))
		for _, rw := range []struct {
			r    *testRouter
			want map[netip.Prefix][]uint32
		}{{r1, st.r1}, {r2, st.r2}} {
			waitRoutes(t, rw.r, st.what, func(rs map[netip.Prefix]route) bool {
				return maps.EqualFunc(rs, rw.want, func(got route, want []uint32) bool { return slices.Equal(got.communities, want) })
			})
		}
	}
	if n1, n2 := r1.establishedCount(), r2.establishedCount(); n1 != 1 || n2 != 1 {
		t.Errorf("sessions reset by path changes: established %d and %d times", n1, n2)
	}
}

// TestApplyPathsNamesThePrefixesOfItsPaths: a prefix given only by its
// paths counts as named, also when those paths now reach no session: it
// is withdrawn.
func TestApplyPathsNamesThePrefixesOfItsPaths(t *testing.T) {
	ctx := context.Background()
	s, _ := newTestSpeaker(t, nil)
	must(t, s.Apply(ctx, Desired{NodeIPv4: nodeV4, NodeIPv6: nodeV6, Sessions: idleSessions(), Paths: []Path{{Prefix: vip4}, {Prefix: vip4b}}}))
	must(t, s.ApplyPaths(ctx, PathChange{Paths: []Path{{Prefix: vip4, Peers: []string{"no-such-session"}}}}))
	if _, ok := s.rib[vip4]; ok {
		t.Errorf("%s still in the RIB: %v", vip4, s.rib)
	}
	if _, ok := s.rib[vip4b]; !ok {
		t.Errorf("%s, not named, left the RIB: %v", vip4b, s.rib)
	}
}
