package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// otherNamespace creates a second namespace for the test, its Services
// deleted when the test ends (the test API server has no namespace
// controller to empty a deleted namespace).
func (e *env) otherNamespace(suffix string) string {
	e.t.Helper()
	ns := e.ns + "-" + suffix
	_, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx := context.Background()
		svcs, _ := e.kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if svcs != nil {
			for _, s := range svcs.Items {
				_ = e.kube.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
		}
	})
	return ns
}

// svcIn creates a LoadBalancer Service in namespace ns and waits for its
// address.
func (e *env) svcIn(ns, name string, mutate func(*corev1.Service)) string {
	e.t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	mutate(s)
	if _, err := e.kube.CoreV1().Services(ns).Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return e.addrIn(ns, name)
}

func (e *env) addrIn(ns, name string) string {
	e.t.Helper()
	var got string
	e.eventually("an address for "+ns+"/"+name, 20*time.Second, func() bool {
		s, err := e.kube.CoreV1().Services(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil || len(ips(s)) == 0 {
			return false
		}
		got = ips(s)[0]
		return true
	})
	return got
}

// TestSharingKeyStaysInItsNamespace: a Service of another namespace with
// the same sharing key does not join an address without the pool's
// consent (spec.sharing.acrossNamespaces), is told so without the other
// namespace's name, and the first Service keeps its address throughout:
// when it takes a port a later joiner uses, the joiner moves; a restart
// of the controller moves nobody.
func TestSharingKeyStaysInItsNamespace(t *testing.T) {
	e := newEnv(t)
	other := e.otherNamespace("b")
	e.pool("main", nil, "198.51.100.64/29")
	stop := e.startController(controller.Options{})
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP

	e.svc("first", shared("k", tcp, 80, false, ""))
	first := e.waitAnyIPs("first", 1)[0]
	intruder := e.svcIn(other, "intruder", shared("k", udp, 53, false, ""))
	if intruder == first {
		t.Fatalf("a Service of namespace %s joined %s, held under the same key in %s, without the pool's consent", other, first, e.ns)
	}
	ev := e.waitEvent(other, "intruder", "SharingRefused", "another namespace", "spec.sharing.acrossNamespaces")
	if namesNamespace(ev.Message, e.ns) || strings.Contains(ev.Message, "first") {
		t.Errorf("the refusal names the other namespace's Service: %s", ev.Message)
	}
	// asking for the address itself is refused the same way
	asks := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "asks", Namespace: other, Annotations: map[string]string{v1beta1.AnnotationLoadBalancerIPs: first}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	shared("k", tcp, 443, false, "")(asks)
	if _, err := e.kube.CoreV1().Services(other).Create(e.ctx, asks, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var refusal string
	e.eventually("asks refused", 20*time.Second, func() bool {
		s, err := e.kube.CoreV1().Services(other).Get(e.ctx, "asks", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range s.Status.Conditions {
			if c.Type == v1beta1.ConditionAllocated && c.Status == metav1.ConditionFalse && c.Reason == "IncompatibleSharing" {
				refusal = c.Message
				return len(ips(s)) == 0
			}
		}
		return false
	})
	if namesNamespace(refusal, e.ns) || !strings.Contains(refusal, "another namespace") {
		t.Errorf("the refusal of a requested address: %s", refusal)
	}
	e.waitIPs("first", first)

	// the pool's consent lets a new Service of both namespaces join
	e.updatePool("main", func(p *v1beta1.IPAddressPool) {
		p.Spec.Sharing = &v1beta1.PoolSharing{AcrossNamespaces: []string{e.ns, other}}
	})
	e.waitPoolObserved("main")
	if got := e.svcIn(other, "invited", shared("k", tcp, 8080, false, "")); got != first {
		t.Errorf("with the pool's consent, %s/invited got %s, not the shared %s", other, got, first)
	}
	if got := e.addrIn(other, "intruder"); got != intruder {
		t.Errorf("consent given moved %s/intruder from %s to %s", other, intruder, got)
	}

	// the first Service takes the port the later one uses: the later
	// one moves, the first keeps its address
	e.updateSvc("first", func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Protocol: tcp, Port: 8080})
	})
	var invited string
	e.eventually("invited moves off the first Service's address", 20*time.Second, func() bool {
		invited = e.addrIn(other, "invited")
		return invited != first
	})
	e.waitIPs("first", first)
	if invited != intruder {
		t.Errorf("%s/invited moved to %s, not to %s, held under its key in its own namespace", other, invited, intruder)
	}

	// a restart restores everyone where they were
	stop()
	e.startController(controller.Options{})
	e.svc("sentinel", nil)
	e.waitAnyIPs("sentinel", 1)
	e.waitIPs("first", first)
	for name, want := range map[string]string{"intruder": intruder, "invited": invited} {
		if got := e.addrIn(other, name); got != want {
			t.Errorf("after a restart %s/%s has %s, want %s", other, name, got, want)
		}
	}
}

// namesNamespace reports whether msg names namespace ns (the other
// namespace's name, which begins with ns, does not count).
func namesNamespace(msg, ns string) bool {
	for _, f := range strings.FieldsFunc(msg, func(r rune) bool { return r == ' ' || r == '/' || r == ',' || r == ';' || r == ':' }) {
		if f == ns {
			return true
		}
	}
	return false
}
