package l2

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// tenantNS is a second tenant's namespace, beside testNS.
const tenantNS = "l2-tenant"

// TestSharingKeyStaysInItsNamespace: a Service of another namespace that
// sets the same sharing key as a Service of testNS, on a port that would
// not clash, is refused the address (the l2 pool does not consent to
// sharing across namespaces): it gets an address of its own, a
// SharingRefused event that names neither the other Service nor its
// namespace, and the first Service keeps its address. On the wire, each
// address is answered by its own namespace's pods only.
func TestSharingKeyStaysInItsNamespace(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	shareKey := func(key string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAllowSharedIP] = key }
	}
	_, firstIPs := suite.Service(t, "share-first", poolL2, shareKey("tenant-key"), "node1")
	first := firstIPs[0]

	since := time.Now()
	intruder := lab.LoadBalancerService(tenantNS, "share-intruder")
	intruder.Annotations = map[string]string{"herald.dev/address-pool": "l2", v1beta1.AnnotationAllowSharedIP: "tenant-key"}
	intruder.Spec.Ports = []corev1.ServicePort{{Name: "alt", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)}}
	t.Cleanup(func() { _ = l.DeleteService(context.Background(), tenantNS, intruder.Name) })
	_, intruderIPs, err := h.CreateService(ctx, intruder, "node2")
	if err != nil {
		t.Fatal(err)
	}
	other := intruderIPs[0]
	if other == first {
		t.Fatalf("%s/%s joined %s, held under the same key by %s/share-first, without the pool's consent", tenantNS, intruder.Name, first, testNS)
	}
	msg := l.WaitEvent(t, since, "Service", intruder.Name, "SharingRefused", "another namespace", "spec.sharing.acrossNamespaces")
	if strings.Contains(msg, testNS+"/") || strings.Contains(msg, "share-first") {
		t.Errorf("the refusal names the other namespace's Service: %s", msg)
	}
	t.Logf("refused: %s", msg)

	checkIPs(t, l, "share-first", []netip.Addr{first})
	for _, c := range []struct {
		ns   string
		addr netip.Addr
		port int
	}{{testNS, first, 80}, {tenantNS, other, 8080}} {
		harness.Owner(t, l, c.addr)
		// kube-proxy may not have the new Service's rules yet: until then
		// it refuses the connection
		var a lab.PodAnswer
		labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("an HTTP answer from %s:%d", c.addr, c.port), func() (bool, string) {
			var err error
			a, err = l.HTTPGet(ctx, "client", c.addr, c.port)
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		if !podOf(t, l, c.ns, a.Server) {
			t.Errorf("%s:%d answered by %s (%s), not a pod of namespace %s", c.addr, c.port, a.Pod, a.Server, c.ns)
		}
	}
	// the intruder's port is not served on the first Service's address
	if a, err := l.HTTPGet(ctx, "client", first, 8080); err == nil {
		t.Errorf("%s:8080 answered by %s: the other namespace's Service reached the first's address", first, a.Pod)
	}
}

// podOf reports whether server (an address:port a pod answered from) is
// the address of a pod of namespace ns.
func podOf(t testing.TB, l *lab.Lab, ns, server string) bool {
	t.Helper()
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		t.Fatalf("pod answered from %q: %v", server, err)
	}
	pods, err := l.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, ip := range p.Status.PodIPs {
			if ip.IP == ap.Addr().Unmap().String() {
				return true
			}
		}
	}
	return false
}
