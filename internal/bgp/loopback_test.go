package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-lb/herald/test/labkit"
)

const (
	speakerASN = 64512
	routerASN  = 64513
	waitLong   = 20 * time.Second
)

var (
	loSpeaker = netip.MustParseAddr("127.0.0.2")
	loNodeV6  = netip.MustParseAddr("2001:db8:1::11")
)

// eventLog records the speaker's session events.
type eventLog struct {
	mu  sync.Mutex
	evs []SessionEvent
}

func (l *eventLog) add(ev SessionEvent) { l.mu.Lock(); l.evs = append(l.evs, ev); l.mu.Unlock() }

func (l *eventLog) count(name string, up bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.evs {
		if e.Name == name && e.Up == up {
			n++
		}
	}
	return n
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newTestSpeaker(t *testing.T, reg prometheus.Registerer) (*Speaker, *eventLog) {
	t.Helper()
	events := &eventLog{}
	s, err := New(Config{Logger: testLogger(), Registerer: reg, OnSessionChange: events.add})
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, events
}

// loSession is a session from the speaker (127.0.0.2) to a test router.
func loSession(name string, r *testRouter, peerASN uint32) Session {
	return Session{
		Name: name, PeerAddress: r.addr, PeerPort: r.port, SourceAddress: loSpeaker,
		MyASN: speakerASN, PeerASN: peerASN, HoldTime: 9 * time.Second, ConnectTime: time.Second,
		Families: []Family{IPv4Unicast, IPv6Unicast},
	}
}

func apply(t *testing.T, s *Speaker, d Desired) {
	t.Helper()
	if err := s.Apply(context.Background(), d); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func waitUp(t *testing.T, s *Speaker, names ...string) time.Duration {
	t.Helper()
	return labkit.EventuallyWhy(t, waitLong, "sessions established", func() (bool, string) {
		up := 0
		var states []string
		for _, st := range s.Sessions() {
			states = append(states, st.Name+"="+st.State)
			if slices.Contains(names, st.Name) && st.State == stateEstablished {
				up++
			}
		}
		return up == len(names), strings.Join(states, " ")
	})
}

func waitRoutes(t *testing.T, r *testRouter, what string, cond func(map[netip.Prefix]route) bool) {
	t.Helper()
	labkit.EventuallyWhy(t, waitLong, what, func() (bool, string) {
		rs := r.routes(t)
		return cond(rs), fmt.Sprint(rs)
	})
}

const (
	c100 = uint32(64512<<16 | 100)
	c200 = uint32(64512<<16 | 200)
)

var large79 = [3]uint32{64512, 7, 9}

func TestLoopbackAdvertise(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)  // eBGP
	r2 := startRouter(t, "127.0.0.4", speakerASN, loSpeaker, speakerASN) // iBGP
	reg := prometheus.NewRegistry()
	s, events := newTestSpeaker(t, reg)
	d := Desired{
		NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{loSession("r1", r1, routerASN), loSession("r2", r2, speakerASN)},
		Paths: []Path{
			{Prefix: vip4, Communities: []uint32{c100}, LargeCommunities: [][3]uint32{large79}, LocalPref: u32(200)},
			{Prefix: vip6},
			{Prefix: vip4b, Peers: []string{"r2"}},
		},
	}
	checkFirstRoutes(t, s, d, r1, r2)
	checkNoTransit(t, s, r1, r2)
	checkPathChanges(t, s, d, r1, r2)
	if n1, n2 := r1.establishedCount(), r2.establishedCount(); n1 != 1 || n2 != 1 {
		t.Errorf("sessions were reset by path changes: established %d and %d times", n1, n2)
	}
	if events.count("r1", false)+events.count("r2", false) != 0 {
		t.Errorf("down events during path changes: %+v", events.evs)
	}
	checkMetrics(t, reg)
	checkShutdownWithdraws(t, s, r1, r2)
	if events.count("r1", false) != 1 || events.count("r2", false) != 1 {
		t.Errorf("one down event per session on Shutdown: %+v", events.evs)
	}
}

// checkFirstRoutes: next hops, communities, LOCAL_PREF on iBGP only, and
// Peers restricting a path to r2.
func checkFirstRoutes(t *testing.T, s *Speaker, d Desired, r1, r2 *testRouter) {
	t.Helper()
	start := time.Now()
	apply(t, s, d)
	t.Logf("time to Established (both sessions): %s", waitUp(t, s, "r1", "r2"))
	waitRoutes(t, r1, "r1 gets the /32 and the /128", func(rs map[netip.Prefix]route) bool {
		_, a := rs[vip4]
		_, b := rs[vip6]
		return a && b
	})
	t.Logf("time from first Apply to the routes on r1: %s", time.Since(start))
	rs1 := r1.routes(t)
	if got := rs1[vip4]; got.nextHop != loSpeaker || !slices.Equal(got.communities, []uint32{c100}) ||
		!slices.Equal(got.large, [][3]uint32{large79}) || got.localPref != 0 {
		t.Errorf("r1 (eBGP) /32: %s; want next hop %s (next-hop-self), community, large community, no LOCAL_PREF", got, loSpeaker)
	}
	if got := rs1[vip6]; got.nextHop != loNodeV6 {
		t.Errorf("r1 /128 over an IPv4 session: next hop %s, want the node's IPv6 %s", got.nextHop, loNodeV6)
	}
	if _, ok := rs1[vip4b]; ok {
		t.Errorf("r1 got %s, which goes to r2 only", vip4b)
	}
	waitRoutes(t, r2, "r2 gets its three routes", func(rs map[netip.Prefix]route) bool { return len(rs) == 3 })
	if got := r2.routes(t)[vip4]; got.localPref != 200 || got.nextHop != loSpeaker {
		t.Errorf("r2 (iBGP) /32: %s; want LOCAL_PREF 200 and next hop %s", got, loSpeaker)
	}
	assertWarning(t, s, "r1", "localPref 200 is not sent")
}

// checkPathChanges: a path added, per-peer attributes for one prefix, a
// path moved to one peer, a path removed.
func checkPathChanges(t *testing.T, s *Speaker, d Desired, r1, r2 *testRouter) {
	t.Helper()
	vip4c := netip.MustParsePrefix("198.51.100.132/32")
	d.Paths = append(d.Paths, Path{Prefix: vip4c})
	t0 := time.Now()
	apply(t, s, d)
	waitRoutes(t, r1, "r1 gets the added path", func(rs map[netip.Prefix]route) bool { _, ok := rs[vip4c]; return ok })
	t.Logf("time from Apply (path added) to the route on r1: %s", time.Since(t0))

	d.Paths = []Path{
		{Prefix: vip4, Peers: []string{"r1"}, Communities: []uint32{c100}},
		{Prefix: vip4, Peers: []string{"r2"}, Communities: []uint32{c200}},
		{Prefix: vip6},
		{Prefix: vip4c, Peers: []string{"r2"}},
	}
	apply(t, s, d)
	waitRoutes(t, r1, "r1: community 100 only, no vip4c", func(rs map[netip.Prefix]route) bool {
		_, c := rs[vip4c]
		return slices.Equal(rs[vip4].communities, []uint32{c100}) && len(rs[vip4].large) == 0 && !c
	})
	waitRoutes(t, r2, "r2: community 200, vip4b withdrawn", func(rs map[netip.Prefix]route) bool {
		_, b := rs[vip4b]
		_, c := rs[vip4c]
		return slices.Equal(rs[vip4].communities, []uint32{c200}) && rs[vip4].localPref == 100 && !b && c
	})
}

// checkShutdownWithdraws: each router receives the withdrawals before the
// session closes (TCP keeps the order, so they were sent first).
func checkShutdownWithdraws(t *testing.T, s *Speaker, routers ...*testRouter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	must(t, s.Shutdown(ctx))
	t.Logf("Shutdown took %s", time.Since(t0))
	for _, r := range routers {
		labkit.EventuallyWhy(t, waitLong, "router sees the session close", func() (bool, string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return slices.Contains(r.log, "down"), strings.Join(r.log, ",")
		})
		r.mu.Lock()
		before := r.log[:slices.Index(r.log, "down")]
		withdrawnFirst := slices.Contains(before, "withdraw "+vip4.String()) && slices.Contains(before, "withdraw "+vip6.String())
		log := strings.Join(r.log, ",")
		r.mu.Unlock()
		if !withdrawnFirst {
			t.Errorf("router %s: withdrawals must arrive before the session closes: %s", r.addr, log)
		}
	}
}

func assertWarning(t *testing.T, s *Speaker, name, want string) {
	t.Helper()
	for _, st := range s.Sessions() {
		if st.Name == name {
			if !strings.Contains(strings.Join(st.Warnings, "|"), want) {
				t.Errorf("session %s: warnings %q, want one containing %q", name, st.Warnings, want)
			}
			return
		}
	}
	t.Errorf("session %s not reported", name)
}

func checkMetrics(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	want := `
# HELP herald_bgp_session_up 1 when the BGP session is Established, else 0.
# TYPE herald_bgp_session_up gauge
herald_bgp_session_up{peer="r1"} 1
herald_bgp_session_up{peer="r2"} 1
# HELP herald_bgp_paths_advertised Paths currently advertised on the BGP session.
# TYPE herald_bgp_paths_advertised gauge
herald_bgp_paths_advertised{peer="r1"} 2
herald_bgp_paths_advertised{peer="r2"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "herald_bgp_session_up", "herald_bgp_paths_advertised"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "herald_bgp_bfd_up"); err != nil || n != 0 {
		t.Errorf("herald_bgp_bfd_up series for sessions without BFD: %d, %v", n, err)
	}
	if n, err := testutil.GatherAndCount(reg, "herald_bgp_updates_sent_total"); err != nil || n != 2 {
		t.Errorf("updates_sent_total series: %d, %v", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

func TestLoopbackSessionChanges(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	r2 := startRouter(t, "127.0.0.4", routerASN, loSpeaker, speakerASN)
	s, events := newTestSpeaker(t, nil)
	d := Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{loSession("r1", r1, routerASN), loSession("r2", r2, routerASN)},
		Paths:    []Path{{Prefix: vip4}}}
	apply(t, s, d)
	waitUp(t, s, "r1", "r2")

	// A second BGPPeer with r1's address is refused with a clear error;
	// nothing else moves.
	dup := loSession("a-dup", r1, routerASN)
	d.Sessions = append(d.Sessions, dup)
	err := s.Apply(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), `already used by session "r1"`) {
		t.Fatalf("duplicate peer address: Apply error %v", err)
	}
	st := sessionNamed(t, s, "a-dup")
	if st.State != stateNotConfigured || !strings.Contains(st.Error, "127.0.0.3") {
		t.Errorf("duplicate session state: %+v", st)
	}
	d.Sessions = d.Sessions[:2]

	// In place: connect timer. Recreated: hold time on r2 only.
	d.Sessions[0].ConnectTime = 3 * time.Second
	d.Sessions[1].HoldTime = 12 * time.Second
	apply(t, s, d)
	labkit.EventuallyWhy(t, waitLong, "r2 re-established", func() (bool, string) {
		return r2.establishedCount() == 2 && sessionNamed(t, s, "r2").State == stateEstablished,
			fmt.Sprintf("r2 established %d times", r2.establishedCount())
	})
	waitRoutes(t, r2, "r2 has the path again", func(rs map[netip.Prefix]route) bool { _, ok := rs[vip4]; return ok })
	if n := r1.establishedCount(); n != 1 {
		t.Errorf("changing r2 (and r1's connect timer) reset r1: established %d times", n)
	}
	if events.count("r1", false) != 0 || events.count("r2", false) != 1 {
		t.Errorf("events: %+v", events.evs)
	}

	// Removing a session closes it and reports it down.
	d.Sessions = d.Sessions[:1]
	apply(t, s, d)
	if _, ok := findSession(s, "r2"); ok {
		t.Error("a removed session is still reported")
	}
	labkit.EventuallyWhy(t, waitLong, "r2 sees the session go", func() (bool, string) {
		r2.mu.Lock()
		defer r2.mu.Unlock()
		return slices.Contains(r2.log, "down"), strings.Join(r2.log, ",")
	})
}

func sessionNamed(t *testing.T, s *Speaker, name string) SessionState {
	t.Helper()
	st, ok := findSession(s, name)
	if !ok {
		t.Fatalf("session %s not reported", name)
	}
	return st
}

func findSession(s *Speaker, name string) (SessionState, bool) {
	for _, st := range s.Sessions() {
		if st.Name == name {
			return st, true
		}
	}
	return SessionState{}, false
}

// TestLoopbackIPv6Session checks next hops over an IPv6 session (::1):
// IPv4 paths carry the node's IPv4 address (GoBGP's next-hop-self would put
// the session's IPv6 address there), IPv6 paths the node's IPv6 address.
func TestLoopbackIPv6Session(t *testing.T) {
	lo6 := netip.MustParseAddr("::1")
	r := startRouter(t, "::1", routerASN, lo6, speakerASN)
	s, _ := newTestSpeaker(t, nil)
	ss := loSession("r6", r, routerASN)
	ss.SourceAddress = lo6
	apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6, Sessions: []Session{ss},
		Paths: []Path{{Prefix: vip4}, {Prefix: vip6}}})
	waitUp(t, s, "r6")
	waitRoutes(t, r, "both routes over the IPv6 session", func(rs map[netip.Prefix]route) bool { return len(rs) == 2 })
	rs := r.routes(t)
	if rs[vip4].nextHop != nodeV4 || rs[vip6].nextHop != loNodeV6 {
		t.Errorf("next hops over an IPv6 session: /32 %s (want %s), /128 %s (want %s)", rs[vip4].nextHop, nodeV4, rs[vip6].nextHop, loNodeV6)
	}
}

// checkNoTransit: a route r1 sends the speaker is kept out of the
// speaker's RIB (import policy) and so never reaches r2.
func checkNoTransit(t *testing.T, s *Speaker, r1, r2 *testRouter) {
	t.Helper()
	learned := netip.MustParsePrefix("198.51.100.200/32")
	rp, err := ribPath(learned, r1.addr, false)
	must(t, err)
	_, err = r1.srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{rp}})
	must(t, err)
	g := s.currentServer()
	list := func(table api.TableType, name string) bool {
		found := false
		must(t, g.srv.ListPath(apiutil.ListPathRequest{TableType: table, Name: name, Family: bgppkt.RF_IPv4_UC},
			func(n bgppkt.NLRI, _ []*apiutil.Path) {
				if p, ok := n.(*bgppkt.IPAddrPrefix); ok && p.Prefix == learned {
					found = true
				}
			}))
		return found
	}
	labkit.EventuallyWhy(t, waitLong, "the speaker received r1's route", func() (bool, string) {
		return list(api.TableType_TABLE_TYPE_ADJ_IN, r1.addr.String()), ""
	})
	if list(api.TableType_TABLE_TYPE_GLOBAL, "") {
		t.Errorf("%s learned from r1 entered the speaker's RIB", learned)
	}
	if _, ok := r2.routes(t)[learned]; ok {
		t.Errorf("%s learned from r1 was re-advertised to r2", learned)
	}
}
