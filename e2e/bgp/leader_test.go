package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/herald-lb/herald/e2e/lab"
	svcutil "github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/test/labkit"
)

// addressWatch records, from a watch on Services, every address every
// Service ever showed, and every moment two Services showed one address.
type addressWatch struct {
	mu         sync.Mutex
	current    map[string][]netip.Addr // Service -> addresses now
	first      map[string][]netip.Addr // Service -> first addresses shown
	duplicates []string
	changed    []string
	stop       func()
}

func watchAddresses(t *testing.T, l *lab.Lab, namespace string) *addressWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := l.Client().CoreV1().Services(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aw := &addressWatch{current: map[string][]netip.Addr{}, first: map[string][]netip.Addr{}}
	done := make(chan struct{})
	aw.stop = func() { cancel(); w.Stop(); <-done }
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			svc, ok := ev.Object.(*corev1.Service)
			if !ok {
				continue
			}
			aw.observe(svc, ev.Type == watch.Deleted)
		}
	}()
	return aw
}

func (aw *addressWatch) observe(svc *corev1.Service, deleted bool) {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	ips := svcutil.IngressIPs(svc)
	if deleted {
		ips = nil
	}
	aw.current[svc.Name] = ips
	if len(ips) > 0 {
		if first, ok := aw.first[svc.Name]; !ok {
			aw.first[svc.Name] = ips
		} else if fmt.Sprint(first) != fmt.Sprint(ips) {
			aw.changed = append(aw.changed, fmt.Sprintf("%s: %v -> %v", svc.Name, first, ips))
		}
	}
	holder := map[netip.Addr]string{}
	for name, addrs := range aw.current {
		for _, a := range addrs {
			if other, ok := holder[a]; ok {
				aw.duplicates = append(aw.duplicates, fmt.Sprintf("%s shown by %s and %s", a, other, name))
			}
			holder[a] = name
		}
	}
}

// TestLeaderDeletedWhileCreating deletes the leading controller Pod while
// 200 Services are being created: the other replica takes over, every
// Service gets an address, no address is ever shown by two Services and
// none changes.
func TestLeaderDeletedWhileCreating(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	const ns, total = "leader", 200
	if err := h.Apply(ctx, `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: leader-test}
spec:
  addresses: ["2001:db8:ee::/120"]
  autoAssign: false
`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = h.Kubectl(context.Background(), "delete", "namespace", ns, "--wait=false")
		_, _ = h.Kubectl(context.Background(), "delete", "ipaddresspools.herald.dev", "leader-test")
	})
	if _, err := l.CreateService(ctx, lab.LoadBalancerService(ns, "first", corev1.IPv6Protocol)); err != nil {
		t.Fatal(err)
	}
	aw := watchAddresses(t, l, ns)
	defer aw.stop()
	var wg sync.WaitGroup
	errs := make(chan error, total)
	next := make(chan int, total)
	for i := 1; i < total; i++ {
		next <- i
	}
	close(next)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				svc := lab.LoadBalancerService(ns, fmt.Sprintf("svc-%03d", i), corev1.IPv6Protocol)
				svc.Annotations = map[string]string{"herald.dev/address-pool": "leader-test"}
				if _, err := l.CreateService(ctx, svc); err != nil {
					errs <- err
				}
			}
		}()
	}
	// delete the leader once a quarter of the Services exist
	labkit.Eventually(t, time.Minute, "50 Services created", func() bool {
		list, err := l.Client().CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) >= 50
	})
	deleted, err := h.DeleteLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	leader, err := h.WaitLeader(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 2*time.Minute, "every Service with an address", func() bool {
		list, err := l.Client().CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		n := 0
		for _, s := range list.Items {
			if s.Annotations["herald.dev/address-pool"] == "leader-test" && len(svcutil.IngressIPs(&s)) == 1 {
				n++
			}
		}
		return n == total-1
	})
	t.Logf("leader %s deleted; %s took over; all %d Services served %v after the deletion", deleted, leader, total-1, time.Since(start).Round(100*time.Millisecond))
	aw.mu.Lock()
	defer aw.mu.Unlock()
	if len(aw.duplicates) > 0 {
		t.Errorf("%d moments with an address shown by two Services, e.g. %s", len(aw.duplicates), aw.duplicates[0])
	}
	if len(aw.changed) > 0 {
		t.Errorf("%d Services changed address without a spec change, e.g. %s", len(aw.changed), aw.changed[0])
	}
	if err := h.WaitRollout(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}
