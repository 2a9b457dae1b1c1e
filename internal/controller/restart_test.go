package controller_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// restartPools: 256 IPv4 and two IPv6 pools.
func (e *env) restartPools() {
	e.pool("v4", nil, "198.51.100.0/24")
	e.pool("v6-a", nil, "2001:db8:a::/120")
	e.pool("v6-b", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "2001:db8:b::/120")
}

func restartService(i int, s *corev1.Service) {
	switch i % 3 {
	case 0: // IPv4 from the default choice
		if i >= 3*80 { // the test API server has 254 IPv4 cluster IPs: the rest are IPv6
			p := corev1.IPFamilyPolicySingleStack
			s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
		}
	case 1:
		p := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
	case 2:
		p := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
		s.Annotations[v1beta1.AnnotationAddressPool] = "v6-b"
	}
}

func TestRestartKeepsEveryAddress(t *testing.T) {
	e := newEnv(t)
	e.restartPools()
	ctrl := e.startBinary("controller-1", "--leader-elect=false")
	const n = 500
	name := func(i int) string { return fmt.Sprintf("svc-%03d", i) }
	e.createMany(n, name, restartService)
	e.waitAllAssigned(120*time.Second, func(string) int { return 1 })
	e.waitAllAnnotated(60 * time.Second) // the annotation follows the status
	before, versions := e.snapshot()

	ctrl.Kill()
	e.startBinary("controller-2", "--leader-elect=false")
	e.svc("sentinel", nil)
	sentinel := e.waitAnyIPs("sentinel", 1)[0]
	after, versionsAfter := e.snapshot()
	for svc, want := range before {
		if !slices.Equal(after[svc], want) {
			t.Errorf("%s moved from %v to %v across a restart", svc, want, after[svc])
		}
		if versionsAfter[svc] != versions[svc] {
			t.Errorf("%s was rewritten by the restarted controller although nothing changed", svc)
		}
		if slices.Contains(want, sentinel) {
			t.Errorf("the sentinel got %s, held by %s", sentinel, svc)
		}
	}
}

func TestRestartWithConfigChangedWhileDown(t *testing.T) {
	e := newEnv(t)
	e.restartPools()
	ctrl := e.startBinary("controller-1", "--leader-elect=false")
	const n = 300
	name := func(i int) string { return fmt.Sprintf("svc-%03d", i) }
	e.createMany(n, name, restartService)
	e.waitAllAssigned(120*time.Second, func(string) int { return 1 })
	e.eventually("finalizers on every pool", 20*time.Second, func() bool {
		for _, p := range []string{"v4", "v6-a", "v6-b"} {
			if !slices.Contains(e.getPool(p).Finalizers, v1beta1.PoolProtectionFinalizer) {
				return false
			}
		}
		return true
	})
	before, _ := e.snapshot()
	ctrl.Kill()

	// while the controller is down: shrink v4, delete v6-b, add a
	// higher-priority pool that overlaps nothing
	e.updatePool("v4", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.0/26"} })
	if err := e.herald.HeraldV1beta1().IPAddressPools().Delete(e.ctx, "v6-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pool("v6-new", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(0))}
	}, "2001:db8:c::/120")

	e.startBinary("controller-2", "--leader-elect=false")
	e.svc("sentinel", func(s *corev1.Service) {
		p := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
	})
	got := e.waitAnyIPs("sentinel", 1)[0]
	if got[:12] != "2001:db8:c::" {
		t.Errorf("new Service got %s, want one from the new priority pool", got)
	}
	after, _ := e.snapshot()
	for svc, want := range before {
		if !slices.Equal(after[svc], want) {
			t.Errorf("%s moved from %v to %v across a restart with config changes", svc, want, after[svc])
		}
	}
	// Services outside the shrunk pool are told so; v6-b waits for its holders
	e.waitCondition(name(3*70), v1beta1.ConditionAllocated, metav1.ConditionTrue, "AddressOutsidePool")
	if p := e.getPool("v6-b"); p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, v1beta1.PoolProtectionFinalizer) {
		t.Errorf("deleted pool v6-b not held by its finalizer: %+v", p.ObjectMeta)
	}
}

func TestConflictAtStartOlderKeepsTheAddress(t *testing.T) {
	e := newEnv(t)
	e.pool("p", nil, "198.51.100.64/29")
	e.svc("older", nil)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	e.svc("younger", nil)
	vip := corev1.LoadBalancerIPModeVIP
	for _, n := range []string{"younger", "older"} {
		s := e.get(n)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.66", IPMode: &vip}}
		if _, err := e.kube.CoreV1().Services(e.ns).UpdateStatus(e.ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.startBinary("controller", "--leader-elect=false")
	e.waitEvent(e.ns, "younger", "AddressConflict", "198.51.100.66")
	e.eventually("younger gets another address", 20*time.Second, func() bool {
		got := ips(e.get("younger"))
		return len(got) == 1 && got[0] != "198.51.100.66"
	})
	if got := ips(e.get("older")); !slices.Equal(got, []string{"198.51.100.66"}) {
		t.Errorf("older Service lost its address: %v", got)
	}
}
