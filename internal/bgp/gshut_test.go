package bgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestGracefulShutdownAttrs: every delivery gains 65535:0 (merged with
// the advertisements' communities, sorted, once); iBGP sessions get
// GracefulShutdownLocalPref (1) whatever the advertisements asked; eBGP ones get none;
// no warning is added.
func TestGracefulShutdownAttrs(t *testing.T) {
	ss := threeSessions(t)
	p := planPaths([]Path{
		{Prefix: vip4, Communities: []uint32{64512<<16 | 1, CommunityGracefulShutdown}, LocalPref: u32(200), Peers: []string{"b"}},
		{Prefix: vip4, Peers: []string{"a", "c"}},
		{Prefix: vip6},
	}, ss, nodeV4, nodeV6)
	warned := !p.warnings.empty()
	p.gracefulShutdown(ss)
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
