package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// The liveness scenarios of a cluster that misbehaves in ordinary ways,
// with the client probing every address all along.

// TestMalformedARPBurstFromClient: while the client probes the IPv4
// addresses every 10 ms, it broadcasts 20 malformed ARP frames every 5 ms
// (protocol length 0, truncated ones) until the owners' ARP responders
// have each counted 2,000 of them as malformed. The addresses stay answered: bad frames
// cost CPU, not answers (before, each one paused the ARP responder 10 ms
// to 1 s).
func TestMalformedARPBurstFromClient(t *testing.T) {
	l, _ := suite.Herald(t)
	var vips []netip.Addr
	for _, vip := range services(t, l, "malformed", 2) {
		if vip.Is4() {
			vips = append(vips, vip)
		}
	}
	// only the owners of IPv4 addresses have an ARP responder to count with
	owners := map[string]bool{}
	for _, vip := range vips {
		owners[harness.Owner(t, l, vip)] = true
	}
	before := nodeMetric(l, "herald_l2_malformed_frames_total", `protocol="arp"`)
	mons := monitorAll(t, l, vips)
	start := time.Now()
	g, err := l.StartGarbage(lab.Client, vips[0], 5*time.Millisecond, 20)
	if err != nil {
		stopAll(t, vips, mons, start, "malformed ARP", 0)
		t.Fatal(err)
	}
	labkit.Eventually(t, time.Minute, fmt.Sprintf("the owners %v counting 2,000 malformed ARP frames each", owners), func() bool {
		now := nodeMetric(l, "herald_l2_malformed_frames_total", `protocol="arp"`)
		for n := range owners {
			if now[n]-before[n] < 2000 {
				return false
			}
		}
		return true
	})
	if err := g.Stop(); err != nil {
		t.Error(err)
	}
	end := time.Now()
	counted := nodeMetric(l, "herald_l2_malformed_frames_total", `protocol="arp"`)
	for n := range owners {
		t.Logf("%s counted %.0f malformed ARP frames in %v", n, counted[n]-before[n], end.Sub(start).Round(time.Millisecond))
	}
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		lab.CheckServed(t, fmt.Sprintf("malformed ARP burst, %s", vips[i]), probes.Between(start, end), lab.Steady())
	}
}

// partitionTable is the nftables table that cuts a node off the member
// list.
const partitionTable = "herald_e2e_partition"

// TestMemberListPartition blocks the member list's port (TCP and UDP
// 7947, both ways) on node1 while the LAN and the API server keep
// working: node1 is cut off from every other member, and the others see
// it dead. The two sides may both announce node1's addresses for a moment;
// the fence on the wire leaves one MAC per address (Warning events
// AddressConflict and herald_l2_conflicts_total when it had work) within
// 10 s. Unblocked, the member list joins again and every address has one
// owner within 10 s. No address goes unanswered for longer than lab.MaxGap,
// neither when the partition starts nor when it heals.
func TestMemberListPartition(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "partition", 3)
	cut := "node1"
	conflictsBefore := sum(nodeMetric(l, "herald_l2_conflicts_total", ""))
	mons := monitorAll(t, l, vips)
	start := time.Now()
	block := fmt.Sprintf("add table inet %[1]s; add chain inet %[1]s in { type filter hook input priority 0; }; add chain inet %[1]s out { type filter hook output priority 0; }; "+
		"add rule inet %[1]s in tcp dport 7947 drop; add rule inet %[1]s in udp dport 7947 drop; add rule inet %[1]s out tcp dport 7947 drop; add rule inet %[1]s out udp dport 7947 drop", partitionTable)
	unblock := func() error {
		_, err := l.Exec(context.Background(), cut, "nft", "delete table inet "+partitionTable)
		return err
	}
	if _, err := l.Exec(ctx, cut, "nft", block); err != nil {
		stopAll(t, vips, mons, start, "partition", 0)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unblock() })

	// the member list declares the two sides dead to each other within a
	// few seconds; the fence then needs at most one refresh interval (3 s)
	const settle, partitioned = 10 * time.Second, 15 * time.Second
	_, _ = mons[0].Wait(ctx, start.Add(partitioned), func(lab.Probe) bool { return true })
	// The heal starts when the unblock does: node1's member list may
	// rejoin (and hand an address over, two MACs for a few tens of ms)
	// before the command returns. Timed after it, that hand-over would
	// count as two MACs inside the partition's window.
	healed := time.Now()
	if err := unblock(); err != nil {
		t.Fatal(err)
	}
	_, _ = mons[0].Wait(ctx, healed.Add(partitioned), func(lab.Probe) bool { return true })
	end := time.Now()

	var conflicted bool
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		for _, phase := range []struct {
			what     string
			from, to time.Time
		}{{"partitioned", start, healed}, {"healed", healed, end}} {
			what := fmt.Sprintf("%s %s, %s", cut, phase.what, vips[i])
			during := probes.Between(phase.from, phase.to)
			checkGaps(t, what, during)
			last, n := lastConflict(during)
			if n > 0 {
				conflicted = true
				t.Logf("%s: %d probes answered by two MACs, the last %v after the change", what, n, last.Sub(phase.from).Round(time.Millisecond))
			}
			if n > 0 && last.Sub(phase.from) > settle {
				t.Errorf("%s: answered by two MACs %v after the change (at %v); want one MAC within %v; around the longest run:\n%s",
					what, last.Sub(phase.from).Round(time.Millisecond), last.Format("15:04:05.000"), settle, during.AroundLongestConflict(3))
			}
		}
	}
	conflicts := sum(nodeMetric(l, "herald_l2_conflicts_total", "")) - conflictsBefore
	t.Logf("partition of %s: herald_l2_conflicts_total +%.0f; any address answered by two MACs: %v", cut, conflicts, conflicted)
	if conflicts > 0 {
		labkit.Eventually(t, 30*time.Second, "a Warning AddressConflict event in "+testNS, func() bool {
			return conflictEvents(ctx, l, start) > 0
		})
	}
}

// checkGaps logs the probes' counts and fails on a gap longer than
// lab.MaxGap. Probes answered by two MACs are judged by the caller: the fence
// allows them for a moment.
func checkGaps(t testing.TB, what string, probes lab.ProbeLog) {
	t.Helper()
	gap, n := probes.LongestGap()
	t.Logf("%s: %d probes, %d unanswered (longest gap %v, %d probes), %d answered by two MACs",
		what, len(probes), len(probes.Unanswered()), gap.Round(time.Millisecond), n, len(probes.Conflicts()))
	if len(probes) == 0 {
		t.Errorf("%s: no probes", what)
	}
	if gap > lab.MaxGap {
		t.Errorf("%s: no answer for %v (%d probes); want at most %v; around it:\n%s", what, gap.Round(time.Millisecond), n, lab.MaxGap, probes.AroundLongestGap(3))
	}
}

// lastConflict returns when the last probe answered by two MACs was sent,
// and how many were.
func lastConflict(probes lab.ProbeLog) (time.Time, int) {
	c := probes.Conflicts()
	if len(c) == 0 {
		return time.Time{}, 0
	}
	return c[len(c)-1].Sent, len(c)
}

// conflictEvents counts the Warning AddressConflict events in testNS
// since t.
func conflictEvents(ctx context.Context, l *lab.Lab, since time.Time) int {
	evs, err := l.Client().CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "reason=AddressConflict"})
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range evs.Items {
		last := e.LastTimestamp.Time
		if e.Series != nil {
			last = e.Series.LastObservedTime.Time
		}
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if e.Type == corev1.EventTypeWarning && !last.Before(since.Truncate(time.Second)) {
			n++
		}
	}
	return n
}

// nodeMetric sums, per node, the samples of a speaker counter whose series
// contains match ("" for all).
func nodeMetric(l *lab.Lab, name, match string) map[string]float64 {
	out := map[string]float64{}
	for _, n := range l.Nodes() {
		for k, v := range scrapeOK(netip.AddrPortFrom(n.IPv4, 7472).String()) {
			if (k == name || strings.HasPrefix(k, name+"{")) && strings.Contains(k, match) {
				out[n.Name] += v
			}
		}
	}
	return out
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// TestCrashloopingSpeakerThenAnotherRestarts: node3's speaker crashes at
// every start (CrashLoopBackOff) while node3 stays Ready, and its liveness
// Lease, renewed until the crash, stays fresh (for up to 15 s after a
// real crash). The others take its addresses (an abrupt failover). Then
// node1's speaker restarts (SIGTERM, the kubelet starts it again) while
// node3's Lease is fresh: the new speaker never saw node3 alive, and
// memberlist drops news of members it never knew, so it learns of
// node3's death from the others' push-pull state (internal/members'
// reports), not from node3's fresh Lease. From node1's restart on, no
// address may go dark (longer than lab.MaxGap) and none may be answered by
// node3 or two nodes side by side beyond a hand-over.
//
// The window is held open rather than raced: how soon the kubelet
// restarts node1's speaker depends on its restart back-off, which earlier
// tests on the shared lab may have raised past 15 s. So the test renews
// node3's Lease itself from the crash until the probes end, as node3's
// speaker would have just before dying, and fails if the Lease was not
// fresh for all of that time.
func TestCrashloopingSpeakerThenAnotherRestarts(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "crashloop", 3)
	const crashing, restarting = "node3", "node1"
	mons := monitorAll(t, l, vips)
	stop := h.CrashLoop(crashing)
	// from here node3's speaker renews nothing: it dies before it syncs
	lease := keepLeaseFresh(t, l, crashing)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	crashed := time.Now()
	for _, vip := range vips {
		labkit.EventuallyWhy(t, 10*time.Second, fmt.Sprintf("%s answered by another node than %s", vip, crashing), func() (bool, string) {
			// the monitors' answers are read too
			var nodes []string
			for _, a := range harness.Probe(t, l, vip) {
				nodes = append(nodes, a.Node)
			}
			return len(nodes) > 0 && !slices.Contains(nodes, crashing), fmt.Sprintf("answered by %v", slices.Compact(slices.Sorted(slices.Values(nodes))))
		})
	}
	t.Logf("the crashing speaker's addresses moved within %v", time.Since(crashed).Round(time.Millisecond))
	restart := time.Now()
	if err := h.Speakers[restarting].Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartSpeaker(restarting); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s's speaker restarted %v after %s's crash", restarting, restart.Sub(crashed).Round(time.Millisecond), crashing)
	// and a while after, with node3 still crashing; the probes end before
	// the crashing stops, after which node3's speaker may start for good
	_, _ = mons[0].Wait(ctx, time.Now().Add(5*time.Second), func(lab.Probe) bool { return true })
	var all []lab.ProbeLog
	for _, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, probes)
	}
	probed := time.Now()
	if err := lease.stop(); err != nil {
		t.Fatalf("the window under test was missed: %v", err)
	}
	if until := lease.freshUntil(); until.Before(probed) {
		t.Fatalf("the window under test was missed: %s's Lease ran out at %v, %v before the probes ended",
			crashing, until.Format(time.RFC3339Nano), probed.Sub(until).Round(time.Millisecond))
	}
	t.Logf("%s's Lease was fresh from its crash until the probes ended (%d renewals by the test)", crashing, lease.renewals())
	kills := stop()
	stopped = true
	t.Logf("%s's speaker was killed %d times at start", crashing, kills)
	for i, probes := range all {
		after := probes.After(restart)
		lab.CheckServed(t, fmt.Sprintf("%s crashlooping, %s restarted, %s", crashing, restarting, vips[i]), after, lab.Rolling())
		for _, p := range after {
			if slices.Contains(p.Nodes(), crashing) {
				t.Errorf("%s answered by the crashlooping %s at +%v after %s's restart", vips[i], crashing, p.Sent.Sub(restart).Round(time.Millisecond), restarting)
				break
			}
		}
	}
	if _, err := h.StartSpeaker(crashing); err != nil {
		t.Fatal(err)
	}
}
