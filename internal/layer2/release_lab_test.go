package layer2

import (
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestLabReleasingStopsBurst switches node1's VIPs to Releasing in the
// middle of their gratuitous bursts (40 x 25 ms): node1 sends no gratuitous
// packet from then on, and keeps answering.
func TestLabReleasingStopsBurst(t *testing.T) {
	l := newLab(t)
	node := l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64")
	client := l.addProbingClient()
	cli := startHelper(t, client, "client")
	cli.expect("ready")
	ann := startHelper(t, node, "announcer", "HERALD_L2_GRAT=40/25ms", "HERALD_L2_LOG=info")
	h := &handoverLab{lab: l, t: t, client: client, cli: cli, ann: [2]*helper{ann}, macs: [2]string{macNode1}}

	// Both bursts start together once the link-local address is usable.
	labkit.Eventually(t, 10*time.Second, "node1's IPv6 addresses past DAD", func() bool {
		return l.IP(node, "-6", "addr", "show", "dev", "eth0", "tentative") == ""
	})
	m := cli.mark()
	ann.set(labVIP4, labVIP6)
	for _, what := range []struct {
		name string
		pred func(frame) bool
	}{{"gratuitous ARP", isGARP(macNode1, labVIP4)}, {"unsolicited NA", isUnsolicitedNA(macNode1, labVIP6)}} {
		labkit.Eventually(t, 10*time.Second, "3 "+what.name+"s", func() bool { return countFrames(cli.framesSince(m), what.pred) >= 3 })
	}
	_, switched := ann.setTimed("~"+labVIP4, "~"+labVIP6)
	sent := h.counters(0, "herald_l2_gratuitous_sent_total")
	if sent[0] >= 40 || sent[1] >= 40 {
		t.Fatalf("gratuitous packets sent %v: the bursts were over before the switch", sent)
	}
	t.Logf("switched to Releasing after %g gratuitous ARPs and %g unsolicited NAs of 40", sent[0], sent[1])

	// Still answered while releasing, until past the bursts' planned end.
	h.startProbing(0)
	end := switched.Add(40 * 25 * time.Millisecond)
	labkit.Eventually(t, 10*time.Second, "answers past the bursts' planned end", func() bool {
		frames := cli.framesSince(m)
		return len(frames) > 0 && frames[len(frames)-1].time().After(end)
	})
	probes := h.stopProbing()
	if c := countProbes(probes); c.unanswered > 0 {
		t.Errorf("%d of %d probes unanswered while releasing", c.unanswered, c.probes)
	}
	if got := h.counters(0, "herald_l2_gratuitous_sent_total"); got != sent {
		t.Errorf("gratuitous packets sent: %v when switched to Releasing, %v later", sent, got)
	}
	frames := cli.framesSince(m)
	if n := countFrames(frames, isGARP(macNode1, labVIP4)); n != int(sent[0]) {
		t.Errorf("client saw %d gratuitous ARPs, node1 counted %g before releasing", n, sent[0])
	}
	if n := countFrames(frames, isUnsolicitedNA(macNode1, labVIP6)); n != int(sent[1]) {
		t.Errorf("client saw %d unsolicited NAs, node1 counted %g before releasing", n, sent[1])
	}
	if y := ann.yieldsSeen(); len(y) != 0 {
		t.Errorf("OnYield with no other host announcing: %+v", y)
	}
}

// TestLabReleasingNeverOwnedThenClaimedBack: node1 is told to release VIPs
// it never owned (as after a speaker restart mid hand-over): it answers and
// never advertises them, and yields when node2 announces them. Then node1
// claims them back while node2 releases them: node1 announces them again
// with a burst and answers, node2 yields.
func TestLabReleasingNeverOwnedThenClaimedBack(t *testing.T) {
	h := newHandoverLab(t)
	node1, node2 := h.ann[0], h.ann[1]
	m := h.cli.mark()
	node1.set(h.with(0, "~"+labVIP4, "~"+labVIP6)...)
	h.startProbing(0)
	if got := node1.ifaces(labVIP4) + " " + node1.ifaces(labVIP6); got != "eth0 eth0" {
		t.Errorf("releasing VIPs announced on %q, want eth0 for both", got)
	}

	node2.set(h.with(1, labVIP4, labVIP6)...)
	for _, vip := range []string{labVIP4, labVIP6} {
		if y := node1.waitYield(0, vip); y.by != macNode2 {
			t.Errorf("node1 OnYield(%s) by %s, want %s", vip, y.by, macNode2)
		}
	}
	if got := node1.ifaces(labVIP4) + node1.ifaces(labVIP6); got != "" {
		t.Errorf("VIPs taken over still announced on %q", got)
	}
	// Answers seen after a later mark mean the capture has reported every
	// frame before it.
	h.waitAnswers(h.cli.mark(), 1, 5)
	if n := countFrames(h.cli.framesSince(m), func(f frame) bool {
		return isGARP(macNode1, labVIP4)(f) || isUnsolicitedNA(macNode1, labVIP6)(f)
	}); n != 0 {
		t.Errorf("node1 sent %d gratuitous packets for VIPs it was releasing", n)
	}

	// Claimed back: listed as owned again, without being dropped first.
	m = h.cli.mark()
	node2.set(h.with(1, "~"+labVIP4, "~"+labVIP6)...)
	back := node1.set(h.with(0, labVIP4, labVIP6)...)
	for _, vip := range []string{labVIP4, labVIP6} {
		if y := node2.waitYield(0, vip); y.by != macNode1 {
			t.Errorf("node2 OnYield(%s) by %s, want %s", vip, y.by, macNode1)
		}
	}
	after := func(f frame) bool { return !f.time().Before(back) }
	h.cli.waitFrame(m, 5*time.Second, "node1's gratuitous ARP", func(f frame) bool { return after(f) && isGARP(macNode1, labVIP4)(f) })
	h.cli.waitFrame(m, 5*time.Second, "node1's unsolicited NA", func(f frame) bool { return after(f) && isUnsolicitedNA(macNode1, labVIP6)(f) })
	h.waitAnswers(h.cli.mark(), 0, 5)

	c := countProbes(h.stopProbing())
	t.Logf("%d probes, %d unanswered, %d answered by both nodes", c.probes, c.unanswered, c.double)
	if c.unanswered > 0 {
		t.Errorf("%d probes unanswered", c.unanswered)
	}
}
