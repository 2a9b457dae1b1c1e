package controller_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/test/testenv"
)

// The controller benchmarks run the controller binary against the real
// API server and report, besides Go's figures:
//   - all-assigned-s: seconds until every Service has its address;
//   - p50-ms, p99-ms: per-Service latency, creation (or controller start)
//     to address in status;
//   - peak-rss-MiB: the controller's peak resident memory (VmHWM).
//
// Run with: make bench-controller (make bench-scale for 10,000), or
//   go test -run XXX -bench Controller -benchtime 1x ./internal/controller/
// The Services are IPv6 single-stack: the test API server has only 254
// IPv4 cluster IPs. The 10,000-Service pool is a /112 (65,536 addresses,
// the size of an IPv4 /16, which the documentation ranges do not have).

// BenchmarkControllerStartWith1000Pending and ...10000Pending: the
// Services exist, the controller starts, how long until all have an
// address; printed next to the API server's floor (hack/apifloor) measured
// just before with the controller's worker count, and with the phases
// of the controller's start (see benchStart). At 1,000 the floor is
// measured again just after (10,000 more Services would take the test API
// server minutes to create).
func BenchmarkControllerStartWith1000Pending(b *testing.B) {
	benchStart(b, 1000, "2001:db8:f::/118", true)
}

func BenchmarkControllerStartWith10000Pending(b *testing.B) {
	benchStart(b, 10000, "2001:db8:f::/112", false)
}

// BenchmarkControllerCreate1000 and ...10000: the controller runs, the
// Services are created at once (16 writers).
func BenchmarkControllerCreate1000(b *testing.B)  { benchCreate(b, 1000, "2001:db8:f::/118") }
func BenchmarkControllerCreate10000(b *testing.B) { benchCreate(b, 10000, "2001:db8:f::/112") }

func benchCreate(b *testing.B, n int, pool string) {
	for i := 0; i < b.N; i++ {
		e := newEnv(b)
		e.pool("bench", nil, pool)
		proc := e.startBinary("controller", "--leader-elect=false")
		e.svc("warmup", ipv6OnlySvc)
		e.waitAnyIPs("warmup", 1)
		w := e.watchFirstAddress()
		var created sync.Map
		start := time.Now()
		e.createMany(n, func(i int) string { return fmt.Sprintf("svc-%05d", i) }, func(i int, s *corev1.Service) {
			ipv6Only(i, s)
			created.Store(s.Name, time.Now())
		})
		w.waitAll(e, n+1, 300*time.Second)
		total := time.Since(start)
		lat := w.latencies(func(name string) time.Time {
			t, _ := created.Load(name)
			if t == nil {
				return time.Time{}
			}
			return t.(time.Time)
		})
		report(b, lat, total, peakRSS(proc.PID()))
	}
}

// benchFlags are extra controller flags from $HERALD_BENCH_FLAGS.
func benchFlags() []string { return strings.Fields(os.Getenv("HERALD_BENCH_FLAGS")) }

func ipv6Only(_ int, s *corev1.Service) { ipv6OnlySvc(s) }

func ipv6OnlySvc(s *corev1.Service) {
	p := corev1.IPFamilyPolicySingleStack
	s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
	s.Spec.AllocateLoadBalancerNodePorts = ptr(false)
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[v1beta1.AnnotationAddressPool] = "bench"
}

// firstAddress records when each Service was first seen with an address.
type firstAddress struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (e *env) watchFirstAddress() *firstAddress {
	e.t.Helper()
	// List, then watch from the list's version: a watch without one
	// starts with an ADDED event for every Service, and at 10,000 the
	// first address then waits behind them (it measured 0.5 s of this
	// test's backlog as the controller's first write).
	l, err := e.kube.CoreV1().Services(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	fa := &firstAddress{seen: map[string]time.Time{}}
	for _, s := range l.Items {
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			fa.seen[s.Name] = time.Now()
		}
	}
	w, err := e.kube.CoreV1().Services(e.ns).Watch(e.ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Service)
			if !ok || ev.Type == watch.Deleted || len(s.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			fa.mu.Lock()
			if _, done := fa.seen[s.Name]; !done {
				fa.seen[s.Name] = time.Now()
			}
			fa.mu.Unlock()
		}
	}()
	e.t.Cleanup(w.Stop)
	return fa
}

func (fa *firstAddress) count() int {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	return len(fa.seen)
}

func (fa *firstAddress) waitAll(e *env, n int, timeout time.Duration) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%d Services with an address", n), timeout, func() bool { return fa.count() >= n })
}

func (fa *firstAddress) latencies(since func(string) time.Time) []time.Duration {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	var out []time.Duration
	for name, t := range fa.seen {
		if s := since(name); !s.IsZero() {
			out = append(out, t.Sub(s))
		}
	}
	slices.Sort(out)
	return out
}

func report(b *testing.B, lat []time.Duration, total time.Duration, rssKiB int) {
	if len(lat) == 0 {
		b.Fatal("no latencies")
	}
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(total.Seconds(), "all-assigned-s")
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(rssKiB)/1024, "peak-rss-MiB")
	b.Logf("%d Services: all assigned in %s, p50 %.1f ms, p99 %.1f ms, controller peak RSS %.1f MiB",
		len(lat), total.Round(time.Millisecond), pct(0.5), pct(0.99), float64(rssKiB)/1024)
}

// peakRSS reads a process's VmHWM in KiB.
func peakRSS(pid int) int {
	m, _ := testenv.ProcessMemory(pid)
	return int(m.HWM / 1024)
}
