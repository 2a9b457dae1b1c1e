package bgp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// TestDrainDropsNothing: while the external client opens a new HTTP
// connection every 20 ms to a BGP address served from every node, node1
// is drained as operations.md says (the drain label, as kubectl herald
// drain sets it; then kubectl drain; then its speaker stopped). The
// router first sees node1's path with GRACEFUL_SHUTDOWN, then without
// node1 while the others stay (FRR honours the community: the path
// leaves its FIB at once), then the withdrawal after the wait; no
// request fails.
func TestDrainDropsNothing(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	all := allNodes(l)
	const victim = "node1"
	others := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == victim })
	_, ips := suite.Service(t, "drain", poolMain, nil, all...)
	p := host(ips[0])
	waitFIB(t, l, p, all...)
	peer := nodeAddrs(l, p.Addr().Is6(), victim)[0]
	client := l.StartHTTPMonitor(t, lab.External, ips[0], 80, 20*time.Millisecond, time.Second)
	labkit.Eventually(t, 10*time.Second, "an HTTP answer through "+ips[0].String(), func() bool {
		_, err := l.HTTPGet(ctx, lab.External, ips[0], 80)
		return err == nil
	})

	start := time.Now()
	if err := l.SetNodeLabel(ctx, victim, v1beta1.LabelDrain, "true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.RemoveNodeLabel(context.Background(), victim, v1beta1.LabelDrain) })
	labkit.EventuallyWhy(t, 10*time.Second, victim+"'s path marked GRACEFUL_SHUTDOWN", func() (bool, string) {
		for _, path := range route(t, l, p).Paths {
			if path.Peer == peer {
				return slices.ContainsFunc(path.Communities, isGshut), "communities " + strings.Join(path.Communities, " ")
			}
		}
		return false, "no path from " + peer.String()
	})
	t.Logf("%s's path marked GRACEFUL_SHUTDOWN %v after the label", victim, time.Since(start).Round(time.Millisecond))
	fibStays(t, l, p, others, "drain label on "+victim, func(r lab.Route) bool { return slices.Equal(sortedNodes(r), others) })
	fibGone := time.Since(start)
	t.Logf("%s's next hop gone from the router's FIB %v after the label", victim, fibGone.Round(time.Millisecond))
	labkit.Eventually(t, 30*time.Second, victim+"'s path withdrawn", func() bool {
		return !slices.ContainsFunc(route(t, l, p).Paths, func(path routerconf.Path) bool { return path.Peer == peer })
	})
	withdrawn := time.Since(start)
	t.Logf("%s's path withdrawn %v after the label", victim, withdrawn.Round(time.Millisecond))
	if withdrawn < gracefulShutdownWait {
		t.Errorf("%s's path withdrawn %v after the label, before the graceful-shutdown wait %v", victim, withdrawn, gracefulShutdownWait)
	}

	if err := l.Drain(ctx, victim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Uncordon(context.Background(), victim) })
	t.Logf("kubectl drain %s done at +%v", victim, time.Since(start).Round(time.Millisecond))
	if err := h.Speakers[victim].Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.StartSpeaker(victim) })
	t.Logf("speaker on %s stopped at +%v", victim, time.Since(start).Round(time.Millisecond))
	fibStays(t, l, p, others, "after the drain", func(r lab.Route) bool { return slices.Equal(sortedNodes(r), others) })
	// a last second of requests after the speaker stopped
	end := time.Now().Add(time.Second)
	labkit.Eventually(t, 5*time.Second, "a second of requests after the stop", func() bool { return time.Now().After(end) })
	checkServed(t, client.Tries(t), start)
}

// gracefulShutdownWait is the speaker's --graceful-shutdown-wait in the
// lab (its default).
const gracefulShutdownWait = 5 * time.Second

func isGshut(c string) bool {
	return c == "65535:0" || c == "gshut" || c == "graceful-shutdown" || c == "gracefulShutdown"
}
