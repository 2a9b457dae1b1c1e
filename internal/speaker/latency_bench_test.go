package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/layer2"
)

// signalL2 tells when an address is first among the announcements.
type signalL2 struct {
	mu     sync.Mutex
	waitIP netip.Addr
	seen   chan time.Time
}

func (l *signalL2) SetAnnouncements(want []layer2.Announcement) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.waitIP.IsValid() {
		return
	}
	if slices.ContainsFunc(want, func(a layer2.Announcement) bool { return a.IP == l.waitIP }) {
		l.seen <- time.Now()
		l.waitIP = netip.Addr{}
	}
}
func (l *signalL2) Interfaces(netip.Addr) []string { return []string{"eth0"} }

func (l *signalL2) expect(ip netip.Addr) {
	l.mu.Lock()
	l.waitIP = ip
	l.mu.Unlock()
}

// BenchmarkServiceToAnnouncement measures, with 1,000 and 10,000 Services
// already announced on node1 of 3 (client-go's fake clientset, no API
// server), the time from a new Service with an address being written to
// the API to the running speaker handing its address to the L2 backend:
// the watch, the 30 ms batch, one reconcile. The responder then answers
// within microseconds (herald_l2_answer_delay_seconds). It prints p50,
// p99 and max over b.N Services.
//
// Run it with: go test -run XXX -bench ServiceToAnnouncement -benchtime 100x ./internal/speaker/
func BenchmarkServiceToAnnouncement(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			kube, herald := benchClients(n)
			l2 := &signalL2{seen: make(chan time.Time, 1)}
			s, err := New(leantest.FromClientsets(kube, herald, testNS), Options{NodeName: "node1", Namespace: testNS, L2: l2})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			defer func() { cancel(); <-done }()
			last := benchService(n-1, n)
			l2.expect(netip.MustParseAddr(last.Status.LoadBalancer.Ingress[0].IP))
			select {
			case <-l2.seen:
			case <-time.After(2 * time.Minute):
				b.Fatal("the speaker never announced the existing Services")
			}
			var took []time.Duration
			b.ResetTimer()
			for i := range b.N {
				svc := benchService(n+i, n)
				ip := netip.MustParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
				l2.expect(ip)
				start := time.Now()
				if _, err := kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-l2.seen:
					took = append(took, at.Sub(start))
				case <-time.After(time.Minute):
					b.Fatalf("Service %s never announced", svc.Name)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			p := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))].Round(100 * time.Microsecond) }
			b.ReportMetric(float64(p(0.5).Microseconds())/1000, "announce-p50-ms")
			b.ReportMetric(float64(p(0.99).Microseconds())/1000, "announce-p99-ms")
			b.Logf("%d Services announced: new Service -> L2 backend p50 %v p99 %v max %v over %d (goal p99 <= 200 ms to the first ARP answer)",
				n, p(0.5), p(0.99), took[len(took)-1], len(took))
		})
	}
}
