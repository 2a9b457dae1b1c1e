package bgp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	svcinfo "github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/testenv"
)

// The benchmarks' pool: 1,024 IPv6 addresses outside the tests' pools.
// The test API server's IPv4 cluster IP range is a /27, so hundreds of
// Services are IPv6 single-stack; their /128s live only in the router's
// RIB and FIB.
const benchConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: bench}
spec:
  addresses: ["2001:db8:ff:1::/118"]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: bench}
spec:
  ipAddressPools: [bench]
`

func benchSetup(b *testing.B) (*lab.Lab, *deploy.Herald) {
	b.Helper()
	l, h := suite.Herald(b)
	apply(b, h, benchConfig, "bgpadvertisement/bench", "ipaddresspool/bench")
	return l, h
}

// createBench creates an IPv6 single-stack Service of the bench pool with
// pods on every node (no waiting).
func createBench(l *lab.Lab, name string) error {
	ctx := context.Background()
	svc := lab.LoadBalancerService(testNS, name, corev1.IPv6Protocol)
	svc.Annotations = map[string]string{"herald.dev/address-pool": "bench"}
	created, err := l.CreateService(ctx, svc)
	if err != nil {
		return err
	}
	return l.SetEndpoints(ctx, created, allNodes(l)...)
}

// deleteAll deletes Services name(0..n-1) (missing ones are fine).
func deleteAll(l *lab.Lab, n int, name func(int) string) error {
	var mu sync.Mutex
	var errs []error
	parallelDo(n, 16, func(i int) {
		if err := l.DeleteService(context.Background(), testNS, name(i)); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// addressOf waits for a Service's first address.
func addressOf(b *testing.B, l *lab.Lab, name string) netip.Addr {
	b.Helper()
	var ip netip.Addr
	deadline := time.Now().Add(30 * time.Second)
	for !ip.IsValid() {
		s, err := l.Client().CoreV1().Services(testNS).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			if ips := svcinfo.IngressIPs(s); len(ips) > 0 {
				ip = ips[0]
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("Service %s got no address in 30 s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ip
}

// BenchmarkBGPServiceRoutes: 100 Services created one after the other;
// for each, the time from the create call until FRR installs its /128 in
// the kernel FIB, and until FRR's RIB holds paths from all 3 nodes; then
// each deleted, and the time until the route leaves the FIB.
func BenchmarkBGPServiceRoutes(b *testing.B) {
	const n = 100
	for range b.N {
		l, _ := benchSetup(b)
		mon := lab.StartRouteMonitor(b, l)
		ctx := context.Background()
		// one Service first, to see the monitor and every session working
		name := func(i int) string { return fmt.Sprintf("bench-%03d", i) }
		b.Cleanup(func() { _ = deleteAll(l, n, name) })
		b.Cleanup(func() { _ = l.DeleteService(context.Background(), testNS, "bench-warmup") })
		if err := createBench(l, "bench-warmup"); err != nil {
			b.Fatal(err)
		}
		mon.Wait(b, host(addressOf(b, l, "bench-warmup")), false, time.Time{}, 60*time.Second)

		var toFIB, toRIB3, gone []time.Duration
		prefixes := make([]netip.Prefix, n)
		for i := range n {
			start := time.Now()
			if err := createBench(l, name(i)); err != nil {
				b.Fatal(err)
			}
			prefixes[i] = host(addressOf(b, l, name(i)))
			toFIB = append(toFIB, mon.Wait(b, prefixes[i], false, start, 30*time.Second).Sub(start))
			for len(route(b, l, prefixes[i]).Paths) < 3 {
				if time.Since(start) > 30*time.Second {
					b.Fatalf("%s: not from 3 nodes after 30 s", prefixes[i])
				}
			}
			toRIB3 = append(toRIB3, time.Since(start))
		}
		for i := range n {
			start := time.Now()
			if err := l.DeleteService(ctx, testNS, name(i)); err != nil {
				b.Fatal(err)
			}
			gone = append(gone, mon.Wait(b, prefixes[i], true, start, 30*time.Second).Sub(start))
		}
		report(b, "create -> /128 in FRR's FIB", "create", toFIB)
		report(b, "create -> FRR's RIB has paths from 3 nodes", "rib3", toRIB3)
		report(b, "delete -> /128 gone from FRR's FIB", "delete", gone)
	}
}

// Benchmark1000BGPServices: 1,000 Services created at once (16 writers):
// the time until FRR's RIB holds all 1,000 /128s from each of the 3 nodes
// and its FIB has them all; the speakers' memory with 1,000 advertised
// prefixes; then all deleted, and the time until every route is gone.
func BenchmarkBGP1000Services(b *testing.B) {
	const n, writers = 1000, 16
	for range b.N {
		l, h := benchSetup(b)
		name := func(i int) string { return fmt.Sprintf("bulk-%04d", i) }
		b.Cleanup(func() { _ = deleteAll(l, n, name) })
		before := speakerMemory(b, h)
		base, baseFIB := receivedV6(b, l), fibCountV6(b, l)
		start := time.Now()
		var mu sync.Mutex
		var errs []error
		parallelDo(n, writers, func(i int) {
			if err := createBench(l, name(i)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		created := time.Since(start)
		rib, fib := waitPrefixCount(b, l, base, baseFIB, n, start, 5*time.Minute)
		after := speakerMemory(b, h)
		b.Logf("1,000 Services (16 writers): all created after %v; all 1,000 /128s in FRR's RIB from 3 nodes after %v (%v after the last create), in its FIB after %v",
			created.Round(time.Millisecond), rib.Round(time.Millisecond), (rib - created).Round(time.Millisecond), fib.Round(time.Millisecond))
		b.ReportMetric(rib.Seconds(), "s-to-rib")
		b.ReportMetric(fib.Seconds(), "s-to-fib")
		for _, node := range allNodes(l) {
			b.Logf("speaker %s with 1,000 prefixes: %v (before: %v); CPU %v, %s",
				node, after[node], before[node], (after[node].CPU - before[node].CPU).Round(10*time.Millisecond), reconcileStats(b, l, node))
		}
		b.ReportMetric(float64(after["node1"].RSS)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(after["node1"].HWM)/(1<<20), "hwm-MiB")

		start = time.Now()
		if err := deleteAll(l, n, name); err != nil {
			b.Fatal(err)
		}
		rib, fib = waitPrefixCount(b, l, base, baseFIB, 0, start, 5*time.Minute)
		b.Logf("1,000 Services deleted: every route gone from FRR's RIB after %v, from its FIB after %v",
			rib.Round(time.Millisecond), fib.Round(time.Millisecond))
		b.ReportMetric(rib.Seconds(), "s-to-withdraw")
	}
}

// BenchmarkBGPNodeFailure: a node's link goes down (rotating over the
// nodes); the time until FRR's FIB loses that next hop, with BFD 100 ms x 3
// and with hold time 3 s. Each round waits for a full recovery first.
func BenchmarkBGPNodeFailure(b *testing.B) {
	rounds := map[bool]int{true: 20, false: 5}
	l, h := suite.Herald(b)
	all := allNodes(l)
	for _, s := range failureSetups(l) {
		b.Run(s.name, func(b *testing.B) {
			for iter := range b.N {
				_, ips := suite.Service(b, fmt.Sprintf("failure-%s-%d", strings.ToLower(s.name), iter), poolMain, nil, all...)
				prefix := host(ips[0])
				prepareFailure(b, l, h, s, prefix)
				var ds, bfd []time.Duration
				for i := range rounds[s.bfd] {
					node := all[i%len(all)]
					var bfdDown func() time.Duration
					if s.bfd {
						bfdDown = watchBFDDown(b, l, node)
					}
					ds = append(ds, linkLoss(b, l, prefix, node))
					if s.bfd {
						bfd = append(bfd, bfdDown())
					}
					recoverLink(b, l, s, prefix, node)
				}
				if s.bfd {
					report(b, s.name+": link down -> FRR's BFD session down (to within one vtysh call)", "bfd", bfd)
				}
				report(b, s.name+": link down -> next hop gone from FRR's FIB", "detect", ds)
			}
		})
	}
}

// watchBFDDown polls FRR's BFD session with node from now on, and returns
// a function that waits for the poll that saw it down and returns when
// that poll began (after the previous one ended: within one vtysh call,
// about 10 ms, of the change).
func watchBFDDown(b *testing.B, l *lab.Lab, node string) func() time.Duration {
	b.Helper()
	n, err := l.Node(node)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	found := make(chan time.Duration, 1)
	go func() {
		for time.Since(start) < 30*time.Second {
			polled := time.Now()
			out, err := l.RouterCLI(context.Background(), "show bfd peer "+n.IPv4.String()+" json")
			if err == nil && strings.Contains(strings.ReplaceAll(out, " ", ""), `"status":"down"`) {
				found <- polled.Sub(start)
				return
			}
		}
		found <- -1
	}()
	return func() time.Duration {
		d := <-found
		if d < 0 {
			b.Fatalf("FRR's BFD session with %s not down 30 s after its link went down", node)
		}
		return d
	}
}

// report logs p50, p99 and max of ds and reports them as metrics.
func report(b *testing.B, what, metric string, ds []time.Duration) {
	b.Helper()
	s := slices.Clone(ds)
	slices.Sort(s)
	pct := func(p float64) time.Duration { return s[int(math.Ceil(p/100*float64(len(s))))-1] }
	b.Logf("%s: n=%d p50=%v p99=%v max=%v", what, len(s),
		pct(50).Round(time.Millisecond), pct(99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	b.ReportMetric(float64(pct(50))/float64(time.Millisecond), metric+"-p50-ms")
	b.ReportMetric(float64(pct(99))/float64(time.Millisecond), metric+"-p99-ms")
	b.ReportMetric(float64(s[len(s)-1])/float64(time.Millisecond), metric+"-max-ms")
}

// parallelDo runs f(0..n-1) on workers goroutines.
func parallelDo(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// receivedV6 returns the IPv6 prefixes FRR accepted from each node's
// IPv4 session.
func receivedV6(b *testing.B, l *lab.Lab) map[netip.Addr]int {
	b.Helper()
	out := map[netip.Addr]int{}
	peers := neighbors(b, l)
	for _, a := range nodeAddrs(l, false) {
		out[a] = peers[a].Received["ipv6"]
	}
	return out
}

// waitPrefixCount waits until FRR accepted base+n IPv6 prefixes from every
// node and its FIB holds baseFIB+n IPv6 BGP routes, and returns both times
// since start.
func waitPrefixCount(b *testing.B, l *lab.Lab, base map[netip.Addr]int, baseFIB, n int, start time.Time, timeout time.Duration) (rib, fib time.Duration) {
	b.Helper()
	for rib == 0 || fib == 0 {
		if rib == 0 {
			got := receivedV6(b, l)
			done := true
			for a, c := range base {
				done = done && got[a] == c+n
			}
			if done {
				rib = time.Since(start)
			}
		}
		if fib == 0 && fibCountV6(b, l) == baseFIB+n {
			fib = time.Since(start)
		}
		if time.Since(start) > timeout {
			b.Fatalf("after %v: FRR accepted %v IPv6 prefixes per node, FIB has %d BGP routes; want %d more than %v",
				timeout, receivedV6(b, l), fibCountV6(b, l), n, base)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rib, fib
}

// fibCountV6 counts the router's IPv6 BGP routes in the kernel.
func fibCountV6(b *testing.B, l *lab.Lab) int {
	b.Helper()
	out, err := l.Exec(context.Background(), lab.Router, "ip", "-o", "-6", "route", "show", "proto", "bgp")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Count(out, "\n")
}

// speakerMemory reads every speaker's memory and CPU time.
func speakerMemory(b *testing.B, h *deploy.Herald) map[string]testenv.Memory {
	b.Helper()
	m, err := h.SpeakerMemory()
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// reconcileStats reads a speaker's reconcile count and mean duration from
// its metrics.
func reconcileStats(b *testing.B, l *lab.Lab, node string) string {
	b.Helper()
	n, err := l.Node(node)
	if err != nil {
		b.Fatal(err)
	}
	m, err := lab.ScrapeMetrics(netip.AddrPortFrom(n.IPv4, 7472).String())
	if err != nil {
		return "no metrics: " + err.Error()
	}
	count, sum := m["herald_speaker_reconcile_duration_seconds_count"], m["herald_speaker_reconcile_duration_seconds_sum"]
	if count == 0 {
		return "no reconcile yet"
	}
	return fmt.Sprintf("%.0f reconciles since start, mean %v", count, time.Duration(sum/count*float64(time.Second)).Round(10*time.Microsecond))
}
