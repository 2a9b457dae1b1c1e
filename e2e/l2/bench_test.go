package l2

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
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
	l, h := herald(b)
	_, ips := service(b, l, "bench-abrupt", nil, "node1", "node2", "node3")
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
	l, h := herald(b)
	_, ips := service(b, l, "bench-graceful", nil, "node1", "node2", "node3")
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
	l, _ := herald(b)
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
		nobody(b, l, mustAddr(vip))
	}
	report(b, "Service created -> first ARP answer (5 ms probes)", lat)
}

// waitSettled waits until exactly one node answers again after a trial.
func waitSettled(t testing.TB, l *lab.Lab, vip netipAddr) { owner(t, l, vip) }

func report(b *testing.B, what string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) time.Duration { return d[int(q*float64(len(d)-1)+0.5)].Round(time.Millisecond) }
	b.Logf("%-70s n=%d p50=%v p99=%v max=%v", what, len(d), p(0.5), p(0.99), d[len(d)-1].Round(time.Millisecond))
}
