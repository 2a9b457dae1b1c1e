package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// TestStopMarksOnlySessionsWithoutGracefulRestart: every node has two
// sessions with the router, the IPv4 one with graceful restart and the
// IPv6 one without. When node2's speaker Pod is deleted (SIGTERM), the
// router receives node2's path again with GRACEFUL_SHUTDOWN over the
// IPv6 session only, for the graceful-shutdown wait, then its
// withdrawal; the IPv4 session's path is never marked and stays, stale,
// through the restart, so the router's FIB keeps node2 throughout; the
// new speaker refreshes it.
func TestStopMarksOnlySessionsWithoutGracefulRestart(t *testing.T) {
	l, h := suite.Herald(t)
	const victim = "node2"
	apply(t, h, peerYAML(peerV4, "gracefulRestart: true")+"---"+
		peerYAML(peerV6, "peerAddress: "+strconv.Quote(lab.RouterIPv6)), "bgppeer/"+peerV6)
	waitSessions(t, l, 60*time.Second, append(nodeAddrs(l, false), nodeAddrs(l, true)...)...)
	waitGracefulRestart(t, l, nodeAddrs(l, false)...)
	all := allNodes(l)
	_, ips := suite.Service(t, "stopmark", poolMain, nil, all...)
	p := host(ips[0])
	grPeer, plainPeer := nodeAddrs(l, false, victim)[0], nodeAddrs(l, true, victim)[0]
	labkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s's paths over both sessions", victim), func() bool {
		r := route(t, l, p)
		return slices.Contains(pathPeers(r), grPeer) && slices.Contains(pathPeers(r), plainPeer) && slices.Contains(r.FIBNodes(), victim)
	})
	from := func(r lab.Route, peer netip.Addr) (routerconf.Path, bool) {
		i := slices.IndexFunc(r.Paths, func(x routerconf.Path) bool { return x.Peer == peer })
		if i < 0 {
			return routerconf.Path{}, false
		}
		return r.Paths[i], true
	}
	// check fails the test when the graceful-restart session's path is
	// marked or gone, or the FIB loses the node.
	check := func(what string, r lab.Route) {
		gr, ok := from(r, grPeer)
		if !ok || slices.ContainsFunc(gr.Communities, isGshut) || !slices.Contains(r.FIBNodes(), victim) {
			t.Fatalf("%s: the path over the graceful-restart session %+v (present %v), FIB via %v: want it unmarked and %s in the FIB",
				what, gr, ok, r.FIBNodes(), victim)
		}
	}

	start := time.Now()
	old := deleteSpeakerPod(t, h, victim)
	t.Cleanup(func() { _, _ = h.StartSpeaker(victim) })
	t.Logf("speaker Pod %s on %s deleted", old, victim)
	labkit.EventuallyWhy(t, 10*time.Second, "the path over the session without graceful restart marked", func() (bool, string) {
		r := route(t, l, p)
		check("marking", r)
		plain, ok := from(r, plainPeer)
		return ok && slices.ContainsFunc(plain.Communities, isGshut), "communities " + strings.Join(plain.Communities, " ")
	})
	marked := time.Since(start)
	t.Logf("%s's path over IPv6 (no graceful restart) marked GRACEFUL_SHUTDOWN %v after the delete; over IPv4 (graceful restart) unmarked",
		victim, marked.Round(time.Millisecond))
	labkit.Eventually(t, 30*time.Second, "the path without graceful restart withdrawn, the other one stale", func() bool {
		r := route(t, l, p)
		check("stop", r)
		gr, _ := from(r, grPeer)
		_, plain := from(r, plainPeer)
		return !plain && gr.Stale
	})
	gone := time.Since(start)
	t.Logf("the IPv6 session's path withdrawn and the IPv4 one stale %v after the delete", gone.Round(time.Millisecond))
	if gone-marked < gracefulShutdownWait-time.Second {
		t.Errorf("marked at +%v, withdrawn at +%v: want the graceful-shutdown wait (%v) in between", marked, gone, gracefulShutdownWait)
	}
	if _, err := h.StartSpeaker(victim); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 60*time.Second, "the new speaker's paths over both sessions, fresh", func() bool {
		r := route(t, l, p)
		check("restart", r)
		gr, _ := from(r, grPeer)
		plain, ok := from(r, plainPeer)
		return !gr.Stale && ok && !slices.ContainsFunc(plain.Communities, isGshut)
	})
	t.Logf("the new speaker refreshed both paths %v after the delete", time.Since(start).Round(time.Millisecond))
}
