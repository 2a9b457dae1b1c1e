package l2

import (
	"context"
	"testing"
	"time"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestDrainLabelDropsNothing: while the external client opens a new HTTP
// connection every 20 ms to an L2 address (and the probe asks every
// 10 ms), its owner is drained as operations.md says: the drain label
// (as kubectl herald drain sets it) moves the address make-before-break,
// then kubectl drain and a speaker stop on that node change nothing; no
// request fails and the address is answered throughout.
func TestDrainLabelDropsNothing(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "drainlabel", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	own := harness.Owner(t, l, vip)
	labkit.Eventually(t, 10*time.Second, "an HTTP answer through "+vip.String(), func() bool {
		_, err := l.HTTPGet(ctx, lab.External, vip, 80)
		return err == nil
	})
	client := l.StartHTTPMonitor(t, lab.External, vip, 80, 20*time.Millisecond, time.Second)
	mons := monitorAll(t, l, ips[:1])
	start := time.Now()
	if err := l.SetNodeLabel(ctx, own, v1beta1.LabelDrain, "true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.RemoveNodeLabel(context.Background(), own, v1beta1.LabelDrain) })
	var next string
	labkit.Eventually(t, 30*time.Second, "another node answering for "+vip.String(), func() bool {
		next = harness.Owner(t, l, vip)
		return next != own
	})
	t.Logf("%s moved from %s to %s %v after the label", vip, own, next, time.Since(start).Round(time.Millisecond))
	if err := l.Drain(ctx, own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Uncordon(context.Background(), own) })
	t.Logf("kubectl drain %s done at +%v", own, time.Since(start).Round(time.Millisecond))
	if err := h.Speakers[own].Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.StartSpeaker(own) })
	t.Logf("speaker on %s stopped at +%v", own, time.Since(start).Round(time.Millisecond))
	if got := harness.Owner(t, l, vip); got != next {
		t.Errorf("%s answered by %s after the stop, want %s still", vip, got, next)
	}
	stopAll(t, ips[:1], mons, start, "drain label on the owner "+own, lab.HandOverOverlap)
	sent, failed := 0, 0
	for _, try := range client.Tries(t) {
		if try.Sent.Before(start) {
			continue
		}
		sent++
		if !try.OK {
			failed++
			if failed <= 5 {
				t.Errorf("request at +%v failed: %s", try.Sent.Sub(start).Round(time.Millisecond), try.Error)
			}
		}
	}
	t.Logf("client: %d requests to %s during the drain, %d failed", sent, vip, failed)
	if sent < 20 {
		t.Errorf("only %d requests during the drain: the client did not run", sent)
	}
	if err := l.Uncordon(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitBackendsReady(ctx, testNS, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}
