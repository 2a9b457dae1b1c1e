package layer2

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestLabFenceSplitBrain: node1 and node2 both claim the same VIPs (as
// when the member-list port is blocked between them). With a 300 ms
// refresh and a 500 ms settle time each hears the other's refresh, both
// pick the same winner per VIP (l2owner.Wins), the loser stops: within one
// refresh interval after the settle time every probe is answered by the
// winner alone, and both report the conflict.
func TestLabFenceSplitBrain(t *testing.T) {
	const refresh, settle = 300 * time.Millisecond, 500 * time.Millisecond
	h, winner := startSplitBrain(t, refresh, settle)
	// Both report a conflict for each VIP, the loser with won=false.
	labkit.Eventually(t, 10*time.Second, "conflicts reported by both nodes", func() bool {
		return len(h.ann[0].conflictsSeen()) >= 2 && len(h.ann[1].conflictsSeen()) >= 2
	})
	settled := time.Now()
	for i := range 2 {
		for _, c := range h.ann[i].conflictsSeen() {
			f := strings.Fields(c)
			if len(f) == 4 && (f[3] == "true") != (winner[f[0]] == h.macs[i]) {
				t.Errorf("node%d reported %q; the winner of %s is %s", i+1, c, f[0], winner[f[0]])
			}
		}
	}
	// From one refresh interval after the conflicts on, one MAC per VIP.
	m := h.cli.mark()
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	labkit.Eventually(t, 10*time.Second, "2 s of probes", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(settled.Add(refresh+2*time.Second))
	})
	probes := h.stopProbingAfter(settled.Add(refresh))
	c := countProbes(probes)
	t.Logf("after the fence: %d probes, %d unanswered, %d answered by both", c.probes, c.unanswered, c.double)
	for i, p := range c.unansweredProbes {
		if i < 5 {
			t.Logf("unanswered: %s probe from %s at +%s", p.proto, p.src, p.t.Sub(settled))
		}
	}
	if c.probes < 100 || c.unanswered > 0 || c.double > 0 {
		t.Errorf("after the fence: %d probes, %d unanswered, %d answered by both nodes", c.probes, c.unanswered, c.double)
	}
	for _, p := range probes {
		vip := labVIP4
		if p.proto == protoNDP {
			vip = labVIP6
		}
		for by := range p.by {
			if by != winner[vip] {
				t.Fatalf("%s probe answered by %s, the winner is %s", p.proto, by, winner[vip])
			}
		}
	}
}

// TestLabFenceLoserTellsWinner: the loser of each VIP has owned it for
// longer than the settle time when the winner starts announcing it, and
// neither refreshes, so the winner's one announcement reaches the loser
// and the loser's never reaches the winner (as in a partition where the
// winner's refresh comes first). The loser stops and tells the winner, in
// a frame to the winner's MAC alone: both report the conflict, the client
// sees no announcement from a loser after the winners', and every probe is
// answered by the winner.
func TestLabFenceLoserTellsWinner(t *testing.T) {
	// The refresh sets how long a loser stays fenced (2 x refresh); none
	// is sent within the test.
	const refresh, settle = time.Minute, 300 * time.Millisecond
	h, winner := startNodes(t, refresh, settle, "HERALD_L2_GRAT=1/1s")
	vips := []string{labVIP4, labVIP6}
	lost := [2][]string{}
	for i := range 2 {
		for _, vip := range vips {
			if winner[vip] != h.macs[i] {
				lost[i] = append(lost[i], vip)
			}
		}
	}
	var claimed time.Time
	for i := range 2 {
		if len(lost[i]) > 0 {
			_, claimed = h.ann[i].setTimed(lost[i]...)
		}
	}
	// Let every loser's claim settle (a younger one would be a hand-over
	// in progress, which the fence leaves alone): the settle time is the
	// rule under test, so this waits for it to pass.
	labkit.Eventually(t, 5*time.Second, "the losers' claims settled", func() bool {
		return time.Since(claimed) > settle+100*time.Millisecond
	})
	m := h.cli.mark()
	h.ann[0].set(vips...)
	h.ann[1].set(vips...)
	labkit.Eventually(t, 10*time.Second, "conflicts reported by both nodes", func() bool {
		return len(h.ann[0].conflictsSeen()) >= 2 && len(h.ann[1].conflictsSeen()) >= 2
	})
	for i := range 2 {
		for _, c := range h.ann[i].conflictsSeen() {
			f := strings.Fields(c)
			if len(f) == 4 && (f[3] == "true") != (winner[f[0]] == h.macs[i]) {
				t.Errorf("node%d reported %q; the winner of %s is %s", i+1, c, f[0], winner[f[0]])
			}
		}
	}
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	probing := time.Now()
	labkit.Eventually(t, 10*time.Second, "1 s of probes", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(probing.Add(time.Second))
	})
	for _, f := range h.cli.framesSince(m) {
		for _, vip := range vips {
			loser := h.macs[0]
			if loser == winner[vip] {
				loser = h.macs[1]
			}
			if isGARP(loser, vip)(f) || isUnsolicitedNA(loser, vip)(f) {
				t.Errorf("the client saw the loser %s announce %s after the winner did", loser, vip)
			}
		}
	}
	c := countProbes(h.stopProbing())
	t.Logf("after the fence: %d probes, %d unanswered, %d answered by both", c.probes, c.unanswered, c.double)
	if c.probes < 100 || c.unanswered > 0 || c.double > 0 {
		t.Errorf("after the fence: %d probes, %d unanswered, %d answered by both nodes", c.probes, c.unanswered, c.double)
	}
}

// startSplitBrain starts node1 and node2 announcing both lab VIPs at once
// (a split brain) with the given refresh and settle times, and returns
// the lab and the fence's winner (MAC) of each VIP.
func startSplitBrain(t *testing.T, refresh, settle time.Duration) (*handoverLab, map[string]string) {
	t.Helper()
	h, winner := startNodes(t, refresh, settle)
	h.ann[0].set(labVIP4, labVIP6)
	h.ann[1].set(labVIP4, labVIP6)
	return h, winner
}

// startNodes starts announcers on node1 and node2 with the given refresh
// (0: none, and then no fence either), settle time and environment, announcing nothing, and returns
// the lab and the fence's winner (MAC) of each lab VIP.
func startNodes(t *testing.T, refresh, settle time.Duration, env ...string) (*handoverLab, map[string]string) {
	t.Helper()
	l := newLab(t)
	nodes := [2]string{
		l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64"),
		l.addHost("node2", macNode2, true, "198.51.100.12/25", "2001:db8:1::12/64"),
	}
	client := l.addProbingClient()
	cli := startHelper(t, client, "client")
	cli.expect("ready")
	h := &handoverLab{lab: l, t: t, client: client, cli: cli, macs: [2]string{macNode1, macNode2}}
	for i, ns := range nodes {
		env := append([]string{"HERALD_L2_LOG=info", "HERALD_L2_SETTLE=" + settle.String()}, env...)
		if refresh > 0 {
			env = append(env, "HERALD_L2_REFRESH="+refresh.String())
		}
		h.ann[i] = startHelper(t, ns, "announcer", env...)
	}
	labkit.Eventually(t, 10*time.Second, "IPv6 addresses past DAD", func() bool {
		return l.IP(nodes[0], "-6", "addr", "show", "dev", "eth0", "tentative") == "" &&
			l.IP(nodes[1], "-6", "addr", "show", "dev", "eth0", "tentative") == ""
	})
	winner := map[string]string{}
	for _, vip := range []string{labVIP4, labVIP6} {
		m1, _ := net.ParseMAC(macNode1)
		m2, _ := net.ParseMAC(macNode2)
		winner[vip] = macNode2
		if FenceWins(netip.MustParseAddr(vip), m1, m2) {
			winner[vip] = macNode1
		}
	}
	return h, winner
}

// TestLabFenceWinnerLeaves: after a split brain has been fenced, the
// winner of each VIP stops announcing it. It tells the loser, which
// answers again at once (tellBeaten), instead of finding out at its fence
// verification (0.69 s, measured before the winner told it) or staying
// silent until the fence expires (2 × refresh, 6 s here).
func TestLabFenceWinnerLeaves(t *testing.T) {
	const refresh, settle = 3 * time.Second, 500 * time.Millisecond
	h, winner := startSplitBrain(t, refresh, settle)
	labkit.Eventually(t, 20*time.Second, "conflicts reported by both nodes", func() bool {
		return len(h.ann[0].conflictsSeen()) >= 2 && len(h.ann[1].conflictsSeen()) >= 2
	})
	m := h.cli.mark()
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	labkit.Eventually(t, 10*time.Second, "probes answered", func() bool { return len(h.cli.framesSince(m)) > 20 })
	// Each node keeps only the VIPs it lost: every winner leaves.
	var left time.Time
	for i := range 2 {
		var keep []string
		for _, vip := range []string{labVIP4, labVIP6} {
			if winner[vip] != h.macs[i] {
				keep = append(keep, vip)
			}
		}
		if at := h.ann[i].set(keep...); at.After(left) {
			left = at
		}
	}
	labkit.Eventually(t, 20*time.Second, "3 s of probes after the winners left", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(left.Add(3*time.Second))
	})
	after := h.stopProbingAfter(left)
	for _, proto := range []string{protoARP, protoNDP} {
		gap, last := time.Duration(0), time.Time{}
		var answeredBy string
		for _, p := range after {
			if p.proto != proto {
				continue
			}
			if len(p.by) == 0 {
				if last.IsZero() {
					last = p.t
				}
				gap = max(gap, p.t.Sub(last))
				continue
			}
			last = time.Time{}
			for by := range p.by {
				answeredBy = by
			}
		}
		vip := labVIP4
		if proto == protoNDP {
			vip = labVIP6
		}
		t.Logf("%s: longest run of unanswered probes after the winner left: %v; answered by %s at the end", vip, gap.Round(time.Millisecond), answeredBy)
		if answeredBy == "" || answeredBy == winner[vip] {
			t.Errorf("%s: answered at the end by %q; want the loser (the winner %s left)", vip, answeredBy, winner[vip])
		}
		if gap > DefaultFenceVerify/2 {
			t.Errorf("%s: unanswered for %v after the winner left; told by the winner, the loser should answer at once (its fence verification would take up to %v)", vip, gap.Round(time.Millisecond), DefaultFenceVerify*3/2)
		}
	}
}

// TestLabFenceHealNoGap: a split brain has been fenced, and the member
// list heals. In the healed view each VIP belongs to the node that lost
// its fence, and that node sees the heal first: it lifts its fences
// (LiftFences) and announces those VIPs, while the winner, which has not
// seen the heal yet, still owns them and wins the fence again. A moment
// later the winner sees the heal too and starts releasing them. The VIPs
// must stay answered throughout, and end answered by the former losers
// alone: a lifted claim is new, the former loser does not yield to the
// winner's last reassertion, and the winner, releasing, yields to the
// former loser's announcement (before: the former loser was fenced again
// and the VIP dark until its fence verification, 0.5-0.8 s).
func TestLabFenceHealNoGap(t *testing.T) {
	const refresh, settle = 3 * time.Second, 500 * time.Millisecond
	h, winner := startSplitBrain(t, refresh, settle)
	labkit.Eventually(t, 20*time.Second, "conflicts reported by both nodes", func() bool {
		return len(h.ann[0].conflictsSeen()) >= 2 && len(h.ann[1].conflictsSeen()) >= 2
	})
	vips := []string{labVIP4, labVIP6}
	loser := func(vip string) int {
		if winner[vip] == h.macs[0] {
			return 1
		}
		return 0
	}
	// The fences have settled: wait until every loser's claim is older
	// than the settle time and the client gets one answer per VIP.
	m := h.cli.mark()
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	labkit.Eventually(t, 10*time.Second, "probes answered by the winners alone", func() bool {
		return len(h.cli.framesSince(m)) > 40
	})
	// The former losers see the heal first.
	healed := h.cli.mark()
	for i := range 2 {
		if r := h.ann[i].call("lift"); !strings.HasPrefix(r, "lifted ") {
			t.Fatalf("node%d: lift: %q", i+1, r)
		}
	}
	// Each winner hears its loser's announcement and, still owning the
	// VIP, wins the fence again and announces it once more.
	for _, vip := range vips {
		l, w := h.macs[loser(vip)], winner[vip]
		announces := func(mac string) func(frame) bool {
			if vip == labVIP4 {
				return isGARP(mac, vip)
			}
			return isUnsolicitedNA(mac, vip)
		}
		labkit.Eventually(t, 10*time.Second, "the winner of "+vip+" reasserting after the lifted loser", func() bool {
			var lifted bool
			for _, f := range h.cli.framesSince(healed) {
				lifted = lifted || announces(l)(f)
				if lifted && announces(w)(f) {
					return true
				}
			}
			return false
		})
	}
	// The winners see the heal: each releases the VIPs it won and keeps
	// (now owns) the ones it lost.
	var released time.Time
	for i := range 2 {
		var specs []string
		for _, vip := range vips {
			if loser(vip) == i {
				specs = append(specs, vip)
			} else {
				specs = append(specs, "~"+vip)
			}
		}
		if at := h.ann[i].set(specs...); at.After(released) {
			released = at
		}
	}
	labkit.Eventually(t, 10*time.Second, "1 s of probes after the release", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(released.Add(time.Second))
	})
	after := h.stopProbingAfter(time.Time(healed))
	expectHandedToLosers(t, after, "the heal", released, func(vip string) string { return h.macs[loser(vip)] })
}

// expectHandedToLosers checks the probes from since on (described as
// from): at least 100, every one answered, and from 100 ms after released
// on answered by the loser of each VIP alone (the winner yields when it
// reads the loser's announcement).
func expectHandedToLosers(t *testing.T, after []*probeResult, from string, released time.Time, loser func(vip string) string) {
	t.Helper()
	c := countProbes(after)
	t.Logf("from %s on: %d probes, %d unanswered, %d answered by both", from, c.probes, c.unanswered, c.double)
	for i, p := range c.unansweredProbes {
		if i < 5 {
			t.Logf("unanswered: %s probe at %+v after the release", p.proto, p.t.Sub(released).Round(time.Millisecond))
		}
	}
	if c.probes < 100 || c.unanswered > 0 {
		t.Errorf("from %s on: %d probes, %d unanswered; want every probe answered", from, c.probes, c.unanswered)
	}
	for _, p := range after {
		if p.t.Before(released.Add(100 * time.Millisecond)) {
			continue
		}
		vip := labVIP4
		if p.proto == protoNDP {
			vip = labVIP6
		}
		for by := range p.by {
			if by != loser(vip) {
				t.Fatalf("%s probe %v after the release answered by %s; want the loser %s alone", vip, p.t.Sub(released).Round(time.Millisecond), by, loser(vip))
			}
		}
	}
}

// TestLabFenceWinnerReleasesToFencedLoser: a split brain has been fenced,
// then each winner hands its VIP over to the loser, which saw nothing
// change and is still fenced: a node starved of CPU took another node's
// VIPs by mistake, won the fence, and hands them back once it hears the
// owner again. The winner tells the loser that it gave the VIP up, the
// loser announces it at once, and the winner answers until it reads that
// announcement: no probe unanswered, and from 100 ms after the hand-over
// on, answered by the loser alone. Before, the winner yielded at once to
// the loser's announcement from before the fence while the loser stayed
// fenced (unanswered until its fence verification, up to 0.75 s), or,
// when that announcement was older than 3 s, kept answering, the loser's
// verification heard it, and both answered once the loser's fence expired.
func TestLabFenceWinnerReleasesToFencedLoser(t *testing.T) {
	const refresh, settle = 3 * time.Second, 500 * time.Millisecond
	h, winner := startSplitBrain(t, refresh, settle)
	labkit.Eventually(t, 20*time.Second, "conflicts reported by both nodes", func() bool {
		return len(h.ann[0].conflictsSeen()) >= 2 && len(h.ann[1].conflictsSeen()) >= 2
	})
	vips := []string{labVIP4, labVIP6}
	loserMAC := func(vip string) string {
		if winner[vip] == h.macs[0] {
			return h.macs[1]
		}
		return h.macs[0]
	}
	m := h.cli.mark()
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	labkit.Eventually(t, 10*time.Second, "probes answered by the winners", func() bool {
		return len(h.cli.framesSince(m)) > 40
	})
	var released time.Time
	for i := range 2 {
		var specs []string
		for _, vip := range vips {
			if winner[vip] == h.macs[i] {
				specs = append(specs, "~"+vip)
			} else {
				specs = append(specs, vip)
			}
		}
		if at := h.ann[i].set(specs...); at.After(released) {
			released = at
		}
	}
	labkit.Eventually(t, 10*time.Second, "1 s of probes after the hand-over", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(released.Add(time.Second))
	})
	after := h.stopProbingAfter(released.Add(-200 * time.Millisecond))
	expectHandedToLosers(t, after, "200 ms before the hand-over", released, loserMAC)
}

// TestLabHandBackToAnsweringOwner: a node is declared dead by mistake
// (its speaker starved of CPU) while it still answers its VIPs; another
// node claims them, then hears it alive again and hands them back. The
// owner's claim is younger than the fence's settle time (its Service was
// created a moment before, as in e2e/l2's drain test), so the takeover's
// announcement does not fence it, and it has no reason to announce the
// VIPs again: it never stopped. The node handing back asks who answers
// (the release ask, l2owner release.go) and yields to the owner's answer. Before, it answered
// beside the owner until the owner's next periodic announcement or the
// end of the release grace (420 ms side by side in CI).
func TestLabHandBackToAnsweringOwner(t *testing.T) {
	const refresh, settle = 3 * time.Second, 2 * time.Second
	h, _ := startNodes(t, refresh, settle)
	const owner, taker = 1, 0
	vips := []string{labVIP4, labVIP6}
	m := h.cli.mark()
	claimed := h.ann[owner].set(vips...)
	if r := h.cli.call("probeall %s %s 5ms", labVIP4, labVIP6); r != "probing" {
		t.Fatalf("client: %q", r)
	}
	h.waitAnswers(m, owner, 1)
	answering := time.Now() // every probe from here on must be answered
	took := h.cli.mark()
	h.ann[taker].set(vips...)
	labkit.Eventually(t, 10*time.Second, "answers from the node that took the VIPs over", func() bool {
		f := h.cli.framesSince(took)
		return countFrames(f, isAnswerFrom(h.macs[taker], labVIP4)) > 0 && countFrames(f, isAnswerFrom(h.macs[taker], labVIP6)) > 0
	})
	released := h.ann[taker].set("~"+labVIP4, "~"+labVIP6)
	if young := released.Sub(claimed); young >= settle {
		t.Fatalf("the owner's claim was %v old at the hand-back; the test needs it younger than the settle time %v", young, settle)
	}
	labkit.Eventually(t, 10*time.Second, "1 s of probes after the hand-back", func() bool {
		f := h.cli.framesSince(m)
		return len(f) > 0 && f[len(f)-1].time().After(released.Add(time.Second))
	})
	after := h.stopProbingAfter(answering)
	expectHandedToLosers(t, after, "the owner's first answers", released, func(string) string { return h.macs[owner] })
}
