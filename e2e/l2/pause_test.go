package l2

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
)

// pauseFor is how long TestPausedOwnerResumesSilently stops the owner's
// node: far longer than any failure detection, as a VM pause or a live
// migration.
const pauseFor = 8 * time.Second

// pauseProbeInterval is how often each address is probed there.
const pauseProbeInterval = 20 * time.Millisecond

// TestPausedOwnerResumesSilently stops every process of the node that
// owns the most of 12 addresses (6 dual-stack Services) with SIGSTOP for
// pauseFor, as a VM pause does, while the client probes every address
// every 20 ms, then resumes it (SIGCONT). The others take its addresses
// over within the failure detection; once resumed, it must answer
// nothing until it knows who answers (internal/l2owner): no probe
// answered by two MACs after the resume, and at most one change of owner
// per address (the hand-back, make-before-break).
func TestPausedOwnerResumesSilently(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "paused", 6)
	owners := map[netip.Addr]string{}
	count := map[string]int{}
	for _, vip := range vips {
		owners[vip] = harness.Owner(t, l, vip)
		count[owners[vip]]++
	}
	paused := ""
	for _, n := range slices.Sorted(maps.Keys(count)) {
		if paused == "" || count[n] > count[paused] {
			paused = n
		}
	}
	mons := make([]*lab.Monitor, len(vips))
	for i, vip := range vips {
		m, err := l.StartMonitor(vip, pauseProbeInterval)
		if err != nil {
			t.Fatal(err)
		}
		mons[i] = m
		t.Cleanup(func() { _, _ = m.Stop() })
		if _, err := m.Wait(ctx, time.Time{}, lab.Probe.Answered); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = h.Heal(context.Background()) })
	_, _ = mons[0].Wait(ctx, time.Now().Add(time.Second), func(lab.Probe) bool { return true }) // a second of probes before

	pausesBefore := nodeMetric(l, "herald_l2_pauses_total", "")
	staleBefore := answersLaterThan100ms(l)
	start := time.Now()
	resume, n, err := l.PauseNode(paused)
	if resume != nil {
		t.Cleanup(func() { _ = resume() })
	}
	if err != nil {
		t.Fatal(err)
	}
	_, _ = mons[0].Wait(ctx, start.Add(pauseFor), func(lab.Probe) bool { return true })
	resumed := time.Now()
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped %d processes of %s (owner of %d of the %d addresses) for %v", n, paused, count[paused], len(vips), resumed.Sub(start).Round(time.Millisecond))
	// past the hand-back: the member list sees the node alive again, the
	// addresses move back, the release grace (2 s) ends
	_, _ = mons[0].Wait(ctx, resumed.Add(6*time.Second), func(lab.Probe) bool { return true })
	for node, d := range logPauses(t, l, "over the pause", pausesBefore) {
		if (node == paused) != (d > 0) {
			t.Errorf("%s's speaker counted %.0f pauses; want some on the paused node %s alone", node, d, paused)
		}
	}
	// Requests queued during the pause are read at once on resume;
	// answering them answers for addresses another node owns now. At
	// most the one request each read loop (ARP, NDP) held when the
	// processes stopped may be answered late.
	stale := answersLaterThan100ms(l)[paused] - staleBefore[paused]
	t.Logf("%s answered %.0f requests more than 100 ms after the kernel received them, over the pause", paused, stale)
	if stale > 2 {
		t.Errorf("%s answered %.0f requests queued during its pause; want at most 2", paused, stale)
	}

	var failovers []time.Duration
	var lines []string
	doubled, changedTwice := 0, 0
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		vip := vips[i]
		after := probes.After(resumed)
		d, c := pauseFigures(probes.Between(start, resumed), after, owners[vip] == paused, paused, start)
		c = append(lastOwner(probes.Between(start, resumed)), c...)
		c = slices.Compact(c)
		changes := max(len(c)-1, 0)
		line := fmt.Sprintf("%s (owner %s): %d probes after the resume, %d answered by two MACs, %d owner changes %v (from the last before the resume)",
			vip, owners[vip], len(after), d.double, changes, c)
		if d.failover > 0 {
			failovers = append(failovers, d.failover)
			line += fmt.Sprintf(", failover %v", d.failover.Round(time.Millisecond))
		}
		gap, gn := after.LongestGap()
		line += fmt.Sprintf(", longest gap after the resume %v (%d probes)", gap.Round(time.Millisecond), gn)
		lines = append(lines, line)
		doubled += d.double
		if changes > 1 {
			changedTwice++
			t.Errorf("%s: the owner changed %d times after the resume (%v); want at most once", vip, changes, c)
		}
		if d.double > 0 {
			t.Errorf("%s: %d probes answered by two MACs after the resume; want none; around the longest run:\n%s", vip, d.double, after.AroundLongestConflict(3))
		}
		if gap > lab.MaxGap {
			t.Errorf("%s: no answer for %v after the resume; want at most %v; around it:\n%s", vip, gap.Round(time.Millisecond), lab.MaxGap, after.AroundLongestGap(3))
		}
	}
	t.Logf("pause of %s for %v, then resumed:\n  %s", paused, pauseFor, strings.Join(lines, "\n  "))
	slices.Sort(failovers)
	if len(failovers) == 0 {
		t.Fatalf("no address of %s failed over during the pause", paused)
	}
	p99 := failovers[(len(failovers)*99+99)/100-1]
	t.Logf("failover during the pause (%d addresses): min %v, p50 %v, p99 %v; after the resume: %d probes answered by two MACs, %d addresses changed owner more than once",
		len(failovers), failovers[0].Round(time.Millisecond), failovers[len(failovers)/2].Round(time.Millisecond), p99.Round(time.Millisecond), doubled, changedTwice)
	if p99 > 500*time.Millisecond {
		t.Errorf("failover during the pause: p99 %v, want at most 500ms", p99.Round(time.Millisecond))
	}
	logLateAnswers(t, l, "pause of "+paused)
}

// lastOwner is the node that answered alone the last probe of probes so
// answered, if any.
func lastOwner(probes lab.ProbeLog) []string {
	for i := len(probes) - 1; i >= 0; i-- {
		if len(probes[i].MACs()) == 1 {
			return probes[i].Nodes()
		}
	}
	return nil
}

// answersLaterThan100ms is, per node, how many ARP and NDP answers its
// speaker sent more than 100 ms after the kernel received the request
// (herald_l2_answer_delay_seconds), from one scrape of each (two would
// count the answers sent between them).
func answersLaterThan100ms(l *lab.Lab) map[string]float64 {
	out := map[string]float64{}
	for _, n := range l.Nodes() {
		for k, v := range scrapeOK(netip.AddrPortFrom(n.IPv4, 7472).String()) {
			switch {
			case strings.HasPrefix(k, "herald_l2_answer_delay_seconds_count{"):
				out[n.Name] += v
			case strings.HasPrefix(k, "herald_l2_answer_delay_seconds_bucket{") && strings.Contains(k, `le="0.1"`):
				out[n.Name] -= v
			}
		}
	}
	return out
}

// pauseFigure is what one address's probes show around a pause.
type pauseFigure struct {
	// failover: from the pause to the first probe answered by another
	// node alone (0 when the address was not the paused node's).
	failover time.Duration
	// double: probes after the resume answered by two MACs.
	double int
}

// pauseFigures reads one address's probes during and after a pause of
// node that began at start: the failover (when the address was the
// node's), the probes answered by two MACs after the resume, and the
// succession of owners after the resume (each answering alone; the
// changes are its length less one).
func pauseFigures(during, after lab.ProbeLog, owned bool, node string, start time.Time) (pauseFigure, []string) {
	var f pauseFigure
	if owned {
		for _, p := range during {
			if len(p.MACs()) == 1 && p.Nodes()[0] != node {
				f.failover = p.Sent.Sub(start)
				break
			}
		}
	}
	var owners []string
	for _, p := range after {
		switch macs := p.MACs(); {
		case len(macs) > 1:
			f.double++
		case len(macs) == 1:
			if len(owners) == 0 || owners[len(owners)-1] != p.Nodes()[0] {
				owners = append(owners, p.Nodes()[0])
			}
		}
	}
	return f, owners
}
