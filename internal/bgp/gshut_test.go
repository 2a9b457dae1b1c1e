package bgp

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestGracefulShutdownAttrs: in a drain every delivery gains 65535:0
// (merged with the advertisements' communities, sorted, once); iBGP
// sessions get GracefulShutdownLocalPref (1) whatever the advertisements
// asked; eBGP ones get none; no warning is added.
func TestGracefulShutdownAttrs(t *testing.T) {
	ss := threeSessions(t)
	p := planPaths([]Path{
		{Prefix: vip4, Communities: []uint32{64512<<16 | 1, CommunityGracefulShutdown}, LocalPref: u32(200), Peers: []string{"b"}},
		{Prefix: vip4, Peers: []string{"a", "c"}},
		{Prefix: vip6},
	}, ss, nodeV4, nodeV6)
	warned := !p.warnings.empty()
	p.gracefulShutdown(ss, gshutDrain)
	want := map[netip.Prefix]map[netip.Addr]string{
		vip4: {
			peerA:  "c=[4294901760] l=[] lp=- nh=invalid IP",
			peerB:  "c=[4227858433 4294901760] l=[] lp=1 nh=invalid IP",
			peerC6: "c=[4294901760] l=[] lp=- nh=198.51.100.11",
		},
		vip6: {peerA: "c=[4294901760] l=[] lp=- nh=invalid IP", peerC6: "c=[4294901760] l=[] lp=- nh=invalid IP"},
	}
	for prefix, peers := range want {
		for peer, w := range peers {
			if got := attrsKey(p.deliveries[prefix][peer]); got != w {
				t.Errorf("%s to %s: %s, want %s", prefix, peer, got, w)
			}
		}
		if len(p.deliveries[prefix]) != len(peers) {
			t.Errorf("%s: delivered to %d peers, want %d", prefix, len(p.deliveries[prefix]), len(peers))
		}
	}
	if warned != !p.warnings.empty() {
		t.Error("the graceful shutdown changed the warnings")
	}
	if CommunityGracefulShutdown != 4294901760 {
		t.Errorf("GRACEFUL_SHUTDOWN is %d, want 65535:0", CommunityGracefulShutdown)
	}
}

// TestLoopbackGracefulShutdown: with a GracefulShutdownWait, Shutdown
// first sends the paths again with 65535:0 (eBGP and iBGP routers both
// see it, and the advertisements' communities stay), keeps them for the
// wait, then withdraws them before the sessions close.
func TestLoopbackGracefulShutdown(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)  // eBGP
	r2 := startRouter(t, "127.0.0.4", speakerASN, loSpeaker, speakerASN) // iBGP
	const wait = 500 * time.Millisecond
	s, err := New(Config{Logger: testLogger(), GracefulShutdownWait: wait})
	must(t, err)
	apply(t, s, Desired{
		NodeIPv4: nodeV4, NodeIPv6: loNodeV6,
		Sessions: []Session{loSession("r1", r1, routerASN), loSession("r2", r2, speakerASN)},
		Paths:    []Path{{Prefix: vip4, Communities: []uint32{c100}, LocalPref: u32(200)}, {Prefix: vip6}},
	})
	waitUp(t, s, "r1", "r2")
	for _, r := range []*testRouter{r1, r2} {
		waitRoutes(t, r, "the routes", func(rs map[netip.Prefix]route) bool { return len(rs) == 2 })
	}
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	gshut := []uint32{c100, CommunityGracefulShutdown}
	for _, r := range []*testRouter{r1, r2} {
		waitRoutes(t, r, "the routes marked GRACEFUL_SHUTDOWN", func(rs map[netip.Prefix]route) bool {
			return slices.Equal(rs[vip4].communities, gshut) && slices.Equal(rs[vip6].communities, []uint32{CommunityGracefulShutdown})
		})
	}
	if got := r2.routes(t)[vip4].localPref; got != GracefulShutdownLocalPref {
		t.Errorf("iBGP LOCAL_PREF during the graceful shutdown: %d, want %d", got, GracefulShutdownLocalPref)
	}
	must(t, <-done)
	if took := time.Since(t0); took < wait {
		t.Errorf("Shutdown took %s, less than the wait %s", took, wait)
	}
	for _, r := range []*testRouter{r1, r2} {
		labkit.EventuallyWhy(t, waitLong, "router sees the session close", func() (bool, string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return slices.Contains(r.log, "down"), strings.Join(r.log, ",")
		})
		r.mu.Lock()
		before := r.log[:slices.Index(r.log, "down")]
		ok := slices.Contains(before, "withdraw "+vip4.String())
		r.mu.Unlock()
		if !ok {
			t.Errorf("router %s: no withdrawal before the session closed", r.addr)
		}
	}
}

// TestGshutScope: a drain marks every session, graceful restart or not,
// whether the speaker also stops; a stop alone marks the sessions
// without graceful restart; neither marks none.
func TestGshutScope(t *testing.T) {
	for _, c := range []struct {
		drain, stopping bool
		want            gshutScope
		grMarked        bool
		plainMarked     bool
	}{
		{false, false, gshutNone, false, false},
		{false, true, gshutStop, false, true},
		{true, false, gshutDrain, true, true},
		{true, true, gshutDrain, true, true},
	} {
		g := gshutScopeOf(c.drain, c.stopping)
		if g != c.want {
			t.Errorf("drain=%v stopping=%v: scope %d, want %d", c.drain, c.stopping, g, c.want)
		}
		for _, ibgp := range []bool{false, true} {
			for _, gr := range []bool{false, true} {
				s := Session{Name: "s", MyASN: speakerASN, PeerASN: routerASN, GracefulRestart: gr}
				if ibgp {
					s.PeerASN = speakerASN
				}
				want := c.plainMarked
				if gr {
					want = c.grMarked
				}
				if got := g.marks(s); got != want {
					t.Errorf("drain=%v stopping=%v, iBGP=%v graceful restart=%v: marks %v, want %v", c.drain, c.stopping, ibgp, gr, got, want)
				}
			}
		}
	}
}

// TestGracefulShutdownPerSession: for every scope and every choice of
// the three sessions having graceful restart, a delivery is marked
// exactly when the scope marks its session (the community added, and
// LOCAL_PREF 1 on the iBGP one), and is otherwise the unmarked plan's;
// marksAny holds exactly when some delivery is marked.
func TestGracefulShutdownPerSession(t *testing.T) {
	paths := []Path{
		{Prefix: vip4, Communities: []uint32{c100}, LocalPref: u32(200), Peers: []string{"b"}},
		{Prefix: vip4, Peers: []string{"a", "c"}},
		{Prefix: vip6},
	}
	for _, g := range []gshutScope{gshutNone, gshutStop, gshutDrain} {
		for bits := range 8 {
			ss := threeSessions(t)
			for i := range ss {
				ss[i].GracefulRestart = bits&(1<<i) != 0
			}
			plain := planPaths(paths, ss, nodeV4, nodeV6)
			p := planPaths(paths, ss, nodeV4, nodeV6)
			p.gracefulShutdown(ss, g)
			anyMarked := false
			for _, s := range ss {
				for prefix, d := range plain.deliveries {
					was, ok := d[s.PeerAddress]
					if !ok {
						continue
					}
					want := was
					if g.marks(s) {
						anyMarked = true
						want.communities = mergeSorted(was.communities, []uint32{CommunityGracefulShutdown}, cmp.Compare[uint32])
						if s.ibgp() {
							want.localPref, want.hasLocalPref = GracefulShutdownLocalPref, true
						}
					}
					if got := attrsKey(p.deliveries[prefix][s.PeerAddress]); got != attrsKey(want) {
						t.Errorf("scope %d, graceful restart %03b: %s to %s: %s, want %s", g, bits, prefix, s.Name, got, attrsKey(want))
					}
				}
			}
			if got := g.marksAny(ss, p.deliveries); got != anyMarked {
				t.Errorf("scope %d, graceful restart %03b: marksAny %v, want %v", g, bits, got, anyMarked)
			}
			if g == gshutStop && anyMarked == (bits == 0b111) {
				t.Errorf("graceful restart %03b: a stop marks something: %v", bits, anyMarked)
			}
		}
	}
	if gshutDrain.marksAny(threeSessions(t), nil) {
		t.Error("marksAny without deliveries")
	}
}

// TestLoopbackStopMarksSessionsWithoutGracefulRestart: at Shutdown the
// session without graceful restart receives its paths again marked and
// keeps them for the wait before the withdrawal; the one with graceful
// restart never receives a marked path. With graceful restart on every
// session, Shutdown marks nothing and does not wait.
func TestLoopbackStopMarksSessionsWithoutGracefulRestart(t *testing.T) {
	shutdown := func(s *Speaker) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t0 := time.Now()
		err := s.Shutdown(ctx)
		return time.Since(t0), err
	}
	start := func(t *testing.T, grPlain bool, wait time.Duration) (*Speaker, *testRouter, *testRouter) {
		plain := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
		gr := startRouter(t, "127.0.0.4", speakerASN, loSpeaker, speakerASN) // iBGP
		s, err := New(Config{Logger: testLogger(), GracefulShutdownWait: wait})
		must(t, err)
		ssPlain, ssGR := loSession("plain", plain, routerASN), loSession("gr", gr, speakerASN)
		ssPlain.GracefulRestart, ssGR.GracefulRestart = grPlain, true
		apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6, Sessions: []Session{ssPlain, ssGR},
			Paths: []Path{{Prefix: vip4, Communities: []uint32{c100}}, {Prefix: vip6}}})
		waitUp(t, s, "plain", "gr")
		for _, r := range []*testRouter{plain, gr} {
			waitRoutes(t, r, "the routes", func(rs map[netip.Prefix]route) bool { return len(rs) == 2 })
		}
		return s, plain, gr
	}

	t.Run("mixed", func(t *testing.T) {
		const wait = 500 * time.Millisecond
		s, plain, gr := start(t, false, wait)
		done := make(chan error, 1)
		var took time.Duration
		go func() {
			var err error
			took, err = shutdown(s)
			done <- err
		}()
		waitRoutes(t, plain, "the routes marked GRACEFUL_SHUTDOWN", func(rs map[netip.Prefix]route) bool {
			return slices.Equal(rs[vip4].communities, []uint32{c100, CommunityGracefulShutdown}) &&
				slices.Equal(rs[vip6].communities, []uint32{CommunityGracefulShutdown})
		})
		must(t, <-done)
		if took < wait {
			t.Errorf("Shutdown took %s, less than the wait %s", took, wait)
		}
		if n := gr.markedCount(); n != 0 {
			t.Errorf("the graceful-restart session received %d marked paths, want none", n)
		}
		if n := plain.markedCount(); n != 2 {
			t.Errorf("the session without graceful restart received %d marked paths, want 2", n)
		}
	})
	t.Run("all graceful restart", func(t *testing.T) {
		const wait = 15 * time.Second // far above a Shutdown's own time, even under -race
		s, plain, gr := start(t, true, wait)
		took, err := shutdown(s)
		must(t, err)
		if took >= wait {
			t.Errorf("Shutdown took %s with nothing to mark, want no wait of %s", took, wait)
		}
		if n := plain.markedCount() + gr.markedCount(); n != 0 {
			t.Errorf("%d marked paths received, want none", n)
		}
	})
}
