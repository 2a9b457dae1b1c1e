package members

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// detectTrials is how many crashes each detection benchmark measures.
const detectTrials = 20

// BenchmarkDetect measures, over 20 fresh 3-node clusters on loopback, the
// time from one member's crash (Shutdown without Leave: its sockets close,
// as with SIGKILL) until the first and until both survivors see it Dead.
// Run it with: go test -run XXX -bench Detect ./internal/members/
func BenchmarkDetect(b *testing.B) {
	for _, tc := range []struct {
		name   string
		timing Timing
	}{
		{"default", DefaultTiming()},
		{"large-cluster", LargeClusterTiming()},
		{"large-fast", FastLargeClusterTiming()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var first, all []time.Duration
			for range detectTrials {
				f, a := detectOnce(b, tc.timing)
				first, all = append(first, f), append(all, a)
			}
			reportDurations(b, "first survivor", first)
			reportDurations(b, "all survivors", all)
			b.ReportMetric(ms(percentile(all, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(all, 99)), "p99-ms")
			b.ReportMetric(ms(percentile(all, 100)), "max-ms")
		})
	}
}

// BenchmarkLeaveSeen measures, over 20 fresh 3-node clusters, the time
// from the start of Leave until both others see the node Left.
func BenchmarkLeaveSeen(b *testing.B) {
	var all []time.Duration
	for range detectTrials {
		ms := startCluster(b, []string{"node-a", "node-b", "node-c"})
		start := time.Now()
		if err := ms[2].Leave(leaveCtx(b)); err != nil {
			b.Fatal(err)
		}
		var last time.Duration
		for _, m := range ms[:2] {
			waitState(b, m, "node-c", Left, 10*time.Second)
			last = max(last, m.book.since("node-c").Sub(start))
		}
		all = append(all, last)
		shutdownAll(b, ms)
	}
	reportDurations(b, "all others see Left", all)
	b.ReportMetric(ms(percentile(all, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 99)), "p99-ms")
}

// detectOnce crashes one member of a fresh 3-node cluster and returns when
// the first and the last survivor recorded it Dead.
func detectOnce(b *testing.B, timing Timing) (first, all time.Duration) {
	b.Helper()
	ms := startCluster(b, []string{"node-a", "node-b", "node-c"}, withTiming(timing))
	defer shutdownAll(b, ms)
	// Crash at a random phase of the probe schedule, not always right
	// after the cluster formed.
	time.Sleep(rand.N(2 * timing.ProbeInterval))
	crashed := time.Now()
	if err := ms[2].Shutdown(); err != nil {
		b.Fatal(err)
	}
	first = time.Duration(1<<63 - 1)
	for _, m := range ms[:2] {
		waitState(b, m, "node-c", Dead, 30*time.Second)
		d := m.book.since("node-c").Sub(crashed)
		first, all = min(first, d), max(all, d)
	}
	return first, all
}

func shutdownAll(b *testing.B, ms []*testMember) {
	for _, m := range ms {
		if err := m.Shutdown(); err != nil {
			b.Error(err)
		}
	}
}

// percentile by nearest rank: with 20 samples p99 is the largest.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func reportDurations(b *testing.B, what string, ds []time.Duration) {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var line string
	for _, d := range sorted {
		line += fmt.Sprintf(" %d", d.Milliseconds())
	}
	b.Logf("%s, %d trials: p50 %v, p99 %v, max %v; all (ms):%s", what, len(ds),
		percentile(ds, 50).Round(time.Millisecond), percentile(ds, 99).Round(time.Millisecond),
		percentile(ds, 100).Round(time.Millisecond), line)
}
