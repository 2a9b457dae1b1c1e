package speaker

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/bgp"
)

// BenchmarkReconcileBGP measures one speaker reconcile in BGP mode with n
// Services advertised through a real embedded GoBGP (bgp.Speaker; its one
// session never comes up: nothing listens on 127.0.0.5:9), when one
// Service moved to an address no Service had:
//   - changed: the speaker hands over that Service's prefixes alone
//     (ApplyPaths), as it does when only Services changed;
//   - full: it hands over the whole desired state (Apply), as it does when
//     the configuration or the node changed, and did for every change
//     before.
//
// Run it with: go test -run XXX -bench ReconcileBGP -benchmem ./internal/speaker/
func BenchmarkReconcileBGP(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, kind := range []string{"changed", "full"} {
			b.Run(fmt.Sprintf("%d/%s", n, kind), func(b *testing.B) {
				backend, err := bgp.New(bgp.Config{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = backend.Shutdown(context.Background()) })
				kube, herald := bgpBenchClients(n)
				s, store := startedSpeaker(b, kube, herald, n, Options{NodeName: "node1", Namespace: testNS, BGP: backend})
				s.ready.synced.Store(true)
				if err := s.reconcile(context.Background()); err != nil {
					b.Fatal(err)
				}
				if s.bgp.routeCount() != n {
					b.Fatalf("%d routes, want %d", s.bgp.routeCount(), n)
				}
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					svc := benchService(i%n, n)
					svc.ResourceVersion = fmt.Sprint(i + 2)
					svc.Status = benchService(n+1+i, 0).Status
					if err := store.Update(svc); err != nil {
						b.Fatal(err)
					}
					s.cluster.svcCache.touchObject(svc)
					if kind == "full" {
						s.bgp.applied = bgpApplied{} // as after a change of the node
					}
					b.StartTimer()
					if err := s.reconcile(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if s.bgp.lastErr != nil {
					b.Fatalf("BGP refused: %v", s.bgp.lastErr)
				}
			})
		}
	}
}

// bgpBenchClients are fake clientsets holding node1 (IPv4 and IPv6
// addresses), n Services with addresses (benchService), each with a ready
// endpoint on node1, one pool, one BGPAdvertisement and one BGPPeer.
func bgpBenchClients(n int) (*fake.Clientset, *heraldfake.Clientset) {
	node := benchNode(1)
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8:1::11"})
	objs := []runtime.Object{node}
	for i := range n {
		svc := benchService(i, n)
		objs = append(objs, svc, readySlice(svc))
	}
	return fake.NewClientset(objs...), heraldfake.NewSimpleClientset(
		&heraldv1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: heraldv1.IPAddressPoolSpec{Addresses: []string{"2001:db8:f::/112"}}},
		&heraldv1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}},
		&heraldv1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "router"}, Spec: heraldv1.BGPPeerSpec{PeerAddress: "127.0.0.5", PeerPort: 9, PeerASN: 64512, MyASN: 64513}},
	)
}
