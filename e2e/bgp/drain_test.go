package bgp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestDrainDropsNothing: while the external client opens a new HTTP
// connection every 20 ms to a BGP address served from every node, and
// the client on the segment as often to an L2 address, the node that
// answers for the L2 address is drained as operations.md says: the real
// `kubectl herald drain NODE` (built from ./kubectl-herald, run against
// the lab's kubeconfig), then kubectl drain, then its speaker stopped.
// The router first sees the node's path with GRACEFUL_SHUTDOWN, then
// without the node while the others stay (FRR honours the community: the
// path leaves its FIB at once), then the withdrawal after the wait; the
// L2 address moves make-before-break. kubectl herald drain returns only
// once the router has no path from the node and another node answers
// for the L2 address, and prints what moved where. No request fails,
// except that one BGP connection whose handshake is in flight when the
// router's FIB drops the node may be reset (the router's rehash, below).
func TestDrainDropsNothing(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	sc := newDrainScene(t, l, h, "drain")
	victim, p := sc.victim, host(sc.bgp)
	c := sc.startClients(t, l)
	start := time.Now()
	t.Cleanup(func() { _ = l.RemoveNodeLabel(context.Background(), victim, v1beta1.LabelDrain) })
	ran := make(chan herdDrain, 1)
	go func() { ran <- sc.heraldDrain(l) }()
	labkit.EventuallyWhy(t, 10*time.Second, victim+"'s path marked GRACEFUL_SHUTDOWN", func() (bool, string) {
		for _, path := range route(t, l, p).Paths {
			if path.Peer == sc.peer {
				return slices.ContainsFunc(path.Communities, isGshut), "communities " + strings.Join(path.Communities, " ")
			}
		}
		return false, "no path from " + sc.peer.String()
	})
	t.Logf("%s's path marked GRACEFUL_SHUTDOWN %v after kubectl herald drain started", victim, time.Since(start).Round(time.Millisecond))
	fibStays(t, l, p, sc.others, "kubectl herald drain "+victim, func(r lab.Route) bool { return slices.Equal(sortedNodes(r), sc.others) })
	fibGone := time.Now()
	t.Logf("%s's next hop gone from the router's FIB %v after kubectl herald drain started", victim, fibGone.Sub(start).Round(time.Millisecond))

	var d herdDrain
	select {
	case d = <-ran:
	case <-time.After(3 * time.Minute):
		t.Fatal("kubectl herald drain did not return in 3 minutes (its timeout is 2)")
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	took := d.run.Ended.Sub(start)
	t.Logf("kubectl herald drain %s returned %v after it started (exit %d):\n%s%s", victim, took.Round(time.Millisecond), d.run.Code, d.run.Stdout, d.run.Stderr)
	if d.run.Code != 0 {
		t.Fatalf("kubectl herald drain exited %d", d.run.Code)
	}
	if d.readErr != nil {
		t.Fatalf("reading the router and the L2 address when kubectl herald drain returned: %v", d.readErr)
	}
	if slices.Contains(d.paths, sc.peer) {
		t.Errorf("kubectl herald drain returned while the router still had a path for %s from %s (paths from %v)", p, victim, d.paths)
	}
	if len(d.answers) != 1 || d.answers[0] == victim {
		t.Errorf("kubectl herald drain returned while %s was answered by %v, want one node other than %s", sc.l2, d.answers, victim)
	}
	if took < gracefulShutdownWait {
		t.Errorf("kubectl herald drain returned %v after it started, before the graceful-shutdown wait %v", took, gracefulShutdownWait)
	}
	if len(d.answers) == 1 {
		checkDrainOutput(t, sc, d.run.Stdout, d.answers[0])
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
	fibStays(t, l, p, sc.others, "after the drain", func(r lab.Route) bool { return slices.Equal(sortedNodes(r), sc.others) })
	// a last second of requests after the speaker stopped
	end := time.Now().Add(time.Second)
	labkit.Eventually(t, 5*time.Second, "a second of requests after the stop", func() bool { return time.Now().After(end) })
	for _, r := range []struct {
		what string
		m    *lab.HTTPMonitor
		// rehashEnd: a reset sent before it may be the router's (below)
		rehashEnd time.Time
	}{{"external client -> BGP " + sc.bgp.String(), c.bgp, fibGone}, {"client -> L2 " + sc.l2.String(), c.l2, start}} {
		tries := r.m.Tries(t)
		s := summarize(tries, start)
		rehashed := resetsBetween(tries, start, r.rehashEnd)
		t.Logf("%s during the drain: %v", r.what, s)
		// The router's FIB dropping the node moves the flows whose
		// handshake is in flight at that instant (their first packets
		// went to one node, the next to another, which resets them): any
		// ECMP router does that at a change of its next hops (one reset
		// in three lab runs at 50 connections a second). The drain
		// makes that change while every node still serves; at most one
		// such reset, before the poll that saw the change, is the
		// router's, and is logged; every other failure is the test's.
		if rehashed > 1 || s.failed > rehashed {
			t.Errorf("%s: %d of %d requests failed (%d reset while the router's next hops changed): %s",
				r.what, s.failed, s.sent, rehashed, strings.Join(s.errors, "; "))
		} else if rehashed == 1 {
			t.Logf("%s: one connection reset while the router's next hops changed (%s)", r.what, strings.Join(s.errors, "; "))
		}
		if s.sent < 100 {
			t.Errorf("%s: only %d requests during the drain: the client did not run", r.what, s.sent)
		}
	}
	// the lab's own backends evicted from the victim come back after the
	// uncordon; the next test's Services wait for them (SetEndpoints)
	if err := l.Uncordon(ctx, victim); err != nil {
		t.Fatal(err)
	}
}

// gracefulShutdownWait is the speaker's --graceful-shutdown-wait in the
// lab (its default).
const gracefulShutdownWait = 5 * time.Second

func isGshut(c string) bool {
	return c == "65535:0" || c == "gshut" || c == "graceful-shutdown" || c == "gracefulShutdown"
}
