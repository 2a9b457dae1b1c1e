package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/layer2"
)

// BenchmarkReconcile measures one speaker reconcile (L2 mode, 3 nodes)
// with 1,000 and 10,000 Services holding addresses, from informer caches
// filled by client-go's fake clientset (no API server: this is the
// reconcile's own cost):
//   - unchanged: nothing changed since the last reconcile (a member-list
//     change or a resync);
//   - one-changed: one Service's status changed (the common case under churn);
//   - every-address: nothing changed, but the memo and the plan are told
//     that everything did (as after a change of the configuration, the
//     nodes, their liveness, or while a gate holds).
//
// Run it with: go test -run XXX -bench Reconcile -benchmem ./internal/speaker/
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("%d/unchanged", n), func(b *testing.B) {
			s, _ := benchSpeaker(b, n)
			b.ResetTimer()
			for range b.N {
				if err := s.reconcile(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/one-changed", n), func(b *testing.B) {
			s, store := benchSpeaker(b, n)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				svc := benchService(i%n, n)
				svc.ResourceVersion = fmt.Sprint(i + 2)
				svc.Labels = map[string]string{"rev": fmt.Sprint(i)}
				if err := store.Update(svc); err != nil {
					b.Fatal(err)
				}
				s.cluster.svcCache.touchObject(svc) // as the informer's handler does
				b.StartTimer()
				if err := s.reconcile(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/every-address", n), func(b *testing.B) {
			s, _ := benchSpeaker(b, n)
			b.ResetTimer()
			for range b.N {
				s.l2.mu.Lock()
				s.l2.state.incremental = false // the next plan looks at every address
				s.l2.mu.Unlock()
				if err := s.reconcile(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// nullL2 accepts announcements and reports one interface for all.
type nullL2 struct{ n int }

func (l *nullL2) SetAnnouncements(want []layer2.Announcement) { l.n = len(want) }
func (l *nullL2) Interfaces(netip.Addr) []string              { return []string{"eth0"} }

// benchSpeaker is a synced speaker on node1 of 3 whose caches hold n
// Services with addresses from one pool and one L2Advertisement; node2
// and node3 are alive (by their Leases: there is no member list), so
// node1 announces about a third of the addresses. It has reconciled. The
// returned store is its Service cache, to change Services in.
func benchSpeaker(b testing.TB, n int) (*Speaker, cache.Store) {
	b.Helper()
	kube, herald := benchClients(n)
	for _, node := range []string{"node2", "node3"} {
		if _, err := kube.CoordinationV1().Leases(testNS).Create(context.Background(), lease(node, time.Now(), 3600), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	l2 := &nullL2{}
	s, store := startedSpeaker(b, kube, herald, n, Options{NodeName: "node1", Namespace: testNS, L2: l2})
	deadline := time.Now().Add(time.Minute)
	for !s.liveness.live("node2") || !s.liveness.live("node3") {
		if err := s.reconcile(context.Background()); err != nil { // wants the Leases
			b.Fatal(err)
		}
		s.liveness.leases.poll(context.Background()) // as its loop does, when running
		if time.Now().After(deadline) {
			b.Fatal("node2 and node3 never alive by their Leases")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.ready.synced.Store(true) // only now: claiming before the others were alive would hand over two thirds
	if err := s.reconcile(context.Background()); err != nil {
		b.Fatal(err)
	}
	if l2.n < n/5 || l2.n > n/2 {
		b.Fatalf("node1 announces %d of %d addresses, want about a third", l2.n, n)
	}
	return s, store
}

// benchClients are fake clientsets holding 3 Ready nodes, n Services with
// addresses (benchService), one pool and one L2Advertisement.
func benchClients(n int) (*fake.Clientset, *heraldfake.Clientset) {
	objs := []runtime.Object{benchNode(1), benchNode(2), benchNode(3)}
	for i := range n {
		objs = append(objs, benchService(i, n))
	}
	return fake.NewClientset(objs...), heraldfake.NewSimpleClientset(
		&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"2001:db8:f::/112"}}},
		&v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}},
	)
}

// startedSpeaker is a speaker made with opts whose informers have started
// and hold n Services; it has reconciled once.
func startedSpeaker(b testing.TB, kube *fake.Clientset, herald *heraldfake.Clientset, n int, opts Options) (*Speaker, cache.Store) {
	b.Helper()
	s, err := New(leantest.FromClientsets(kube, herald, testNS), opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	if !s.cluster.sync(ctx) {
		b.Fatal("caches did not sync")
	}
	deadline := time.Now().Add(time.Minute)
	for len(s.cluster.serviceIndex.ListKeys()) < n {
		if time.Now().After(deadline) {
			b.Fatal("Services not in the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.reconcile(ctx); err != nil {
		b.Fatal(err)
	}
	return s, s.cluster.serviceIndex
}

// benchService is Service i of n with address 2001:db8:f::i.
func benchService(i, _ int) *corev1.Service {
	ip := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 14: byte(i >> 8), 15: byte(i)})
	vip := corev1.LoadBalancerIPModeVIP
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i), Namespace: "bench", ResourceVersion: "1",
			Annotations: map[string]string{v1beta1.AnnotationAllocatedFromPool: "bench"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
			Ingress: []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: &vip}}}},
	}
}
