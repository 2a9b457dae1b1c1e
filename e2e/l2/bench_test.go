package l2

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// The L2 benchmarks run many trials in the lab and print p50/p99/max
// (they assert nothing). Run: make bench-l2, or
//   go test -p 1 -run '^$' -bench L2 -benchtime 1x ./e2e/l2/
// HERALD_BENCH_TRIALS overrides the number of trials (default 20).

func trials() int {
	n := 20
	fmt.Sscan(envOr("HERALD_BENCH_TRIALS", "20"), &n)
	return n
}

func BenchmarkL2AbruptFailover(b *testing.B) {
	l, h := suite.Herald(b)
	_, ips := suite.Service(b, "bench-abrupt", poolL2, nil, "node1", "node2", "node3")
	var garp, answer []time.Duration
	lost := 0
	for i := 0; i < trials(); i++ {
		f := abruptFailover(b, l, h, ips[0])
		garp, answer = append(garp, f.gratuitous), append(answer, f.answer)
		lost += f.unanswered
		waitSettled(b, l, ips[0])
	}
	report(b, "SIGKILL + link down -> first gratuitous ARP from the new owner", garp)
	report(b, "SIGKILL + link down -> first answered ARP probe (10 ms probes)", answer)
	b.Logf("probes unanswered during %d failovers: %d in all", len(answer), lost)
}

func BenchmarkL2GracefulHandOver(b *testing.B) {
	l, h := suite.Herald(b)
	_, ips := suite.Service(b, "bench-graceful", poolL2, nil, "node1", "node2", "node3")
	var garp []time.Duration
	unanswered, doubled := 0, 0
	for i := 0; i < trials(); i++ {
		f := gracefulFailover(b, l, h, ips[0])
		garp = append(garp, f.gratuitous)
		unanswered += f.unanswered
		doubled += f.doubled
		waitSettled(b, l, ips[0])
	}
	report(b, "SIGTERM -> first gratuitous ARP from the new owner", garp)
	b.Logf("graceful hand-overs: %d; probes unanswered: %d; probes answered by two nodes: %d", len(garp), unanswered, doubled)
	b.ReportMetric(float64(unanswered), "unanswered")
	b.ReportMetric(float64(doubled), "double-answers")
}

func BenchmarkL2ServiceCreationToARPAnswer(b *testing.B) {
	l, _ := suite.Herald(b)
	var lat []time.Duration
	for i := 0; i < trials(); i++ {
		name := fmt.Sprintf("bench-create-%d", i)
		svc := lab.LoadBalancerService(testNS, name)
		svc.Annotations = map[string]string{"herald.dev/address-pool": "l2"}
		vip := fmt.Sprintf("198.51.100.%d", 64+i%12)
		svc.Annotations["herald.dev/loadBalancerIPs"] = vip
		mon, err := l.StartARPMonitor(mustAddr(vip), 5*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := l.CreateService(context.Background(), svc); err != nil {
			b.Fatal(err)
		}
		p, err := mon.Wait(context.Background(), start, lab.Probe.Answered)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, p.Sent.Sub(start))
		_, _ = mon.Stop()
		if err := l.DeleteService(context.Background(), testNS, name); err != nil {
			b.Fatal(err)
		}
		harness.Nobody(b, l, mustAddr(vip))
	}
	report(b, "Service created -> first ARP answer (5 ms probes)", lat)
}

// waitSettled waits until exactly one node answers again after a trial.
func waitSettled(t testing.TB, l *lab.Lab, vip netipAddr) { harness.Owner(t, l, vip) }

func report(b *testing.B, what string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) time.Duration { return d[int(q*float64(len(d)-1)+0.5)].Round(time.Millisecond) }
	b.Logf("%-70s n=%d p50=%v p99=%v max=%v", what, len(d), p(0.5), p(0.99), d[len(d)-1].Round(time.Millisecond))
}

// BenchmarkL2IdleSpeakerMemory restarts every speaker (L2 configuration, no
// Service), waits until each sees all members, then samples their memory
// for 10 s and prints the last and the largest sample of each, and the
// memory of each speaker container's cgroup as the kubelet reports it.
func BenchmarkL2IdleSpeakerMemory(b *testing.B) {
	l, h := suite.Herald(b)
	for _, n := range l.Nodes() {
		if err := h.Speakers[n.Name].Stop(); err != nil {
			b.Fatal(err)
		}
		if _, err := h.StartSpeaker(n.Name); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range l.Nodes() {
		addr := fmt.Sprintf("%s:7472", n.IPv4)
		labkit.Eventually(b, 30*time.Second, "speaker on "+n.Name+" to see 3 members", func() bool {
			return scrapeOK(addr)[`herald_speaker_members{state="alive"}`] == float64(len(l.Nodes()))
		})
	}
	peak := map[string]testenv.Memory{}
	var last map[string]testenv.Memory
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		m, err := h.SpeakerMemory()
		if err != nil {
			b.Fatal(err)
		}
		for node, v := range m {
			if v.RSS > peak[node].RSS {
				peak[node] = v
			}
		}
		last = m
	}
	var node1Set float64
	for _, n := range l.Nodes() {
		b.Logf("idle speaker on %s: %v; largest sample VmRSS %.1f MiB", n.Name, last[n.Name], float64(peak[n.Name].RSS)/(1<<20))
		pid, err := h.Speakers[n.Name].PID()
		if err != nil {
			b.Fatal(err)
		}
		cg, err := testenv.ProcessCgroupMemory(pid)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("its container's cgroup, as the kubelet reports it: working set %.1f MiB, usage %.1f MiB (%s)",
			float64(cg.WorkingSet)/(1<<20), float64(cg.Usage)/(1<<20), cg.Path)
		if n.Name == "node1" {
			node1Set = float64(cg.WorkingSet) / (1 << 20)
		}
	}
	n1, _ := l.Node("node1")
	gm := scrape(b, fmt.Sprintf("%s:7472", n1.IPv4))
	b.Logf("node1's Go runtime: heap in use %.1f MiB, heap released %.1f MiB, stacks %.1f MiB, runtime structures %.1f MiB, %v goroutines",
		gm["go_memstats_heap_inuse_bytes"]/(1<<20), gm["go_memstats_heap_released_bytes"]/(1<<20), gm["go_memstats_stack_inuse_bytes"]/(1<<20),
		(gm["go_memstats_mspan_inuse_bytes"]+gm["go_memstats_mcache_inuse_bytes"]+gm["go_memstats_buck_hash_sys_bytes"]+gm["go_memstats_gc_sys_bytes"]+gm["go_memstats_other_sys_bytes"])/(1<<20),
		gm["go_goroutines"])
	b.ReportMetric(float64(last["node1"].RSS)/(1<<20), "rss-MiB")
	b.ReportMetric(node1Set, "working-set-MiB")
}
