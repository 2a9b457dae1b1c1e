package members

import (
	"testing"
	"time"
)

// BenchmarkMemberListSim runs 200 real memberlist instances in a child
// process for 60 s with the CPU saturated by busy processes (twice as many
// shell loops as the members have threads, at the members' priority or
// below it; either way the 200 members share one machine: far harsher than
// one member per node), kills 12 of them one at a time, and reports:
//   - detect-p50-ms, detect-p99-ms: crash until every survivor sees the
//     member Dead (p99 of 12 kills is the slowest);
//   - false-deaths: healthy members anybody declared dead;
//   - suspicions: failed probes of healthy members (refuted in time).
//
// Run it with: make bench-scale, or
//
//	go test -run XXX -bench MemberListSim -benchtime 1x -timeout 20m ./internal/members/
//
// $HERALD_SIM_MEMBERS and $HERALD_SIM_SECONDS change the size and length,
// $HERALD_SIM_PROCESSES spreads the members over that many processes
// (each with a share of the CPUs as GOMAXPROCS, $HERALD_SIM_GOMAXPROCS to
// change it), so that they do not share one garbage collector;
// $HERALD_SIM_PROBE_INTERVAL, ..._PROBE_TIMEOUT, ..._SUSPICION_MULT and
// ..._GOSSIP_INTERVAL override the preset's fields as the speaker's
// --memberlist-* flags do.
func BenchmarkMemberListSim(b *testing.B) {
	n := envInt("HERALD_SIM_MEMBERS", 200)
	d := time.Duration(envInt("HERALD_SIM_SECONDS", 60)) * time.Second
	procs := envInt("HERALD_SIM_PROCESSES", 1)
	for _, tc := range []struct {
		name   string
		timing Timing
		load   func(testing.TB, time.Duration, int)
	}{
		// The busy loops at the members' own priority: the members get a
		// third of the CPU between them (under 4 ms a second each at 200
		// on 2 cores).
		{"large/equal-priority-load", LargeClusterTiming(), burnCPUInProcesses},
		// The busy loops at nice 19: the CPU is just as saturated, but
		// the members are served first, as a speaker's CPU request is
		// before best-effort pods; even so each of 200 members has a
		// fifth of the 50m the speaker's manifest requests.
		{"large/lower-priority-load", LargeClusterTiming(), burnCPUBelow},
		// large-fast is for speakers that keep their CPU request, so it
		// is measured with the lower-priority load only: at equal
		// priority it collapses here (docs/operations.md).
		{"large-fast/lower-priority-load", FastLargeClusterTiming(), burnCPUBelow},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				r := runSim(b, simOptions{members: n, timing: simTiming(b, tc.timing), load: tc.load, duration: d, kills: 12, procs: procs})
				b.Log(r)
				b.ReportMetric(ms(percentile(r.detection, 50)), "detect-p50-ms")
				b.ReportMetric(ms(percentile(r.detection, 99)), "detect-p99-ms")
				b.ReportMetric(float64(r.falseDeaths), "false-deaths")
				b.ReportMetric(float64(r.suspicions), "suspicions")
			}
		})
	}
}
