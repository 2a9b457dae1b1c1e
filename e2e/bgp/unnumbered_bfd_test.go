package bgp

import (
	"context"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// TestUnnumberedBFD: BFD 100 ms x 3 on the unnumbered sessions, GoBGP's
// single-hop BFD between the IPv6 link-local addresses against FRR's
// "neighbor IF bfd profile": every node's BFD session comes up on both
// sides at a 300 ms detection time. A paused node (its link up, so that
// only BFD or the hold time, 9 s, can tell) has its BFD session down at
// FRR within the detection time and one poll (0.35 s) and its next hop
// gone from FRR's FIB within 1 s, the other nodes' staying; the node is
// back as a next hop, with BFD up, once it resumes. Each node in turn.
func TestUnnumberedBFD(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	if err := l.AddUnnumberedLinks(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.RemoveUnnumberedLinks(context.Background()); err != nil {
			t.Errorf("removing the unnumbered links: %v", err)
		}
	})
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{Unnumbered: true, UnnumberedBFD: true, BFD: routerBFD})
	t.Cleanup(func() {
		if t.Failed() {
			logUnnumbered(t, l)
			out, err := l.RouterCLI(context.Background(), "show bfd peers")
			t.Logf("router: show bfd peers (%v):\n%s", err, out)
		}
	})
	apply(t, h, unnumberedPeer(bfdTimers...))
	all := allNodes(l)
	waitUnnumbered(t, l, all)
	_, ips := suite.Service(t, "unnumbered-bfd", poolMain, nil, all...)
	prefix := host(ips[0])
	waitLayoutHealthy(t, l, prefix, true)
	peers, err := routerBFDPeers(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		t.Logf("router's BFD session with %s: %+v", n, peers[n])
	}

	const bfdBound, fibBound = 350 * time.Millisecond, time.Second
	for _, node := range all {
		bfdDown := watchRouterBFDDown(t, l, node)
		paused, d, resume := pauseLoss(t, l, prefix, node)
		down := bfdDown().Sub(paused)
		resume()
		t.Logf("%s paused: FRR's BFD session down after %v, its next hop gone from FRR's FIB after %v",
			node, down.Round(time.Millisecond), d.Round(time.Millisecond))
		if down > bfdBound {
			t.Errorf("%s: BFD session down after %v, want within %v (100 ms x 3 and one poll)", node, down, bfdBound)
		}
		if d > fibBound {
			t.Errorf("%s: next hop gone after %v, want within %v", node, d, fibBound)
		}
		start := time.Now()
		waitLayoutHealthy(t, l, prefix, true)
		t.Logf("%s resumed: next hop and BFD back after %v", node, time.Since(start).Round(time.Millisecond))
	}
}
