package members

import (
	"context"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// loadDuration is how long each false-suspicion run keeps the CPU busy.
const loadDuration = 10 * time.Second

// BenchmarkFalseSuspicion runs a healthy 3-node cluster for 10 s with every
// CPU saturated and reports how often a healthy node was suspected or
// declared dead: the price of fast detection. Two kinds of load:
//
//   - other-processes: busy shell loops, the kernel shares the CPU (other
//     pods saturating the node);
//   - same-process: busy goroutines next to memberlist's, the Go scheduler
//     shares the CPU (the speaker starved by itself, or throttled by a
//     CPU limit).
//
// Run it with: go test -run XXX -bench FalseSuspicion ./internal/members/
func BenchmarkFalseSuspicion(b *testing.B) {
	loads := []struct {
		name string
		burn func(testing.TB, time.Duration, int)
	}{
		{"other-processes", burnCPUInProcesses},
		{"same-process", burnCPUInGoroutines},
	}
	timings := []struct {
		name   string
		timing Timing
	}{
		{"default", DefaultTiming()},
		{"large-cluster", LargeClusterTiming()},
		{"large-fast", FastLargeClusterTiming()},
	}
	for _, tc := range timings {
		for _, load := range loads {
			b.Run(tc.name+"/"+load.name, func(b *testing.B) {
				ms := startCluster(b, []string{"node-a", "node-b", "node-c"}, withTiming(tc.timing))
				defer shutdownAll(b, ms)
				load.burn(b, loadDuration, 2*runtime.NumCPU())
				var suspects, deaths int
				for _, m := range ms {
					suspects += len(m.logs.matching("member state changed", "to=suspect"))
					deaths += len(m.logs.matching("member state changed", "to=dead"))
				}
				b.Logf("%v of CPU saturation: %d suspicions, %d false deaths", loadDuration, suspects, deaths)
				b.ReportMetric(float64(suspects), "suspicions")
				b.ReportMetric(float64(deaths), "false-deaths")
			})
		}
	}
}

// burnCPUInGoroutines keeps n goroutines of this process spinning for d.
func burnCPUInGoroutines(_ testing.TB, d time.Duration, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				for i := 0; i < 100000; i++ {
					_ = i
				}
			}
		})
	}
	wg.Wait()
}

// burnCPUInProcesses keeps n busy shell loops running for d, at this
// process's priority, and stops them by PID (also if the benchmark fails).
func burnCPUInProcesses(tb testing.TB, d time.Duration, n int) { burnCPU(tb, d, n, 0) }

// burnCPUBelow is burnCPUInProcesses with the loops at nice 19: the CPU is
// saturated, but this process is served first, as the kernel serves a
// speaker's CPU request before best-effort pods.
func burnCPUBelow(tb testing.TB, d time.Duration, n int) { burnCPU(tb, d, n, 19) }

func burnCPU(tb testing.TB, d time.Duration, n, nice int) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		tb.Skip("no sh to run busy loops:", err)
	}
	var procs []*exec.Cmd
	stop := func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		procs = nil
	}
	tb.Cleanup(stop)
	for range n {
		p := exec.Command(sh, "-c", "while :; do :; done")
		if err := p.Start(); err != nil {
			tb.Fatalf("start busy loop: %v", err)
		}
		procs = append(procs, p)
		if nice != 0 {
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, p.Process.Pid, nice); err != nil {
				tb.Fatalf("renice busy loop %d: %v", p.Process.Pid, err)
			}
		}
	}
	end := time.Now().Add(d)
	labkit.Eventually(tb, 2*d, "the load period to end", func() bool { return time.Now().After(end) })
	stop()
}
