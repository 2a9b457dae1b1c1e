package controller_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

func (e *env) getPool(name string) *v1beta1.IPAddressPool {
	e.t.Helper()
	p, err := e.herald.HeraldV1beta1().IPAddressPools().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func poolCondition(p *v1beta1.IPAddressPool, typ string) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestPoolStatusCountsAndFinalizer(t *testing.T) {
	e := newEnv(t)
	e.pool("dual", nil, "198.51.100.64/29", "2001:db8:ff::/64")
	e.startController(controller.Options{})
	e.svc("a", nil)
	e.svc("b", func(s *corev1.Service) {
		p := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv6Protocol}
	})
	e.waitAnyIPs("a", 1)
	e.waitAnyIPs("b", 1)
	e.eventually("pool counts", 20*time.Second, func() bool {
		s := e.getPool("dual").Status
		return s.AssignedIPv4 == 1 && s.AvailableIPv4 == 7 && s.AssignedIPv6 == 1 && s.AvailableIPv6 > 1<<62
	})
	p := e.getPool("dual")
	if !slices.Contains(p.Finalizers, v1beta1.PoolProtectionFinalizer) {
		t.Errorf("finalizer missing: %v", p.Finalizers)
	}
	if c := poolCondition(p, v1beta1.ConditionValid); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Valid = %+v", c)
	}
}

func TestConflictingPoolLeavesOlderUntouched(t *testing.T) {
	e := newEnv(t)
	e.pool("older", nil, "198.51.100.64/30")
	e.startController(controller.Options{})
	e.svc("web", nil)
	e.waitIPs("web", "198.51.100.64")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	e.pool("newer", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(0))}
	}, "198.51.100.64/29")
	e.eventually("newer pool reported Conflicting", 20*time.Second, func() bool {
		c := poolCondition(e.getPool("newer"), v1beta1.ConditionConflicting)
		return c != nil && c.Status == metav1.ConditionTrue && stringsContains(c.Message, "older")
	})
	e.waitEvent("", "newer", "Conflicting", "older")
	e.svc("next", nil)
	e.waitIPs("next", "198.51.100.65")
	if got := ips(e.get("web")); !slices.Equal(got, []string{"198.51.100.64"}) {
		t.Errorf("a new overlapping pool moved an address: %v", got)
	}
}

func TestShrunkPoolTakesNothingAway(t *testing.T) {
	e := newEnv(t)
	e.pool("p", nil, "198.51.100.64/30")
	e.startController(controller.Options{})
	e.svc("web", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.66" })
	e.waitIPs("web", "198.51.100.66")
	e.updatePool("p", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/31"} })
	c := e.waitCondition("web", v1beta1.ConditionAllocated, metav1.ConditionTrue, "AddressOutsidePool")
	if !stringsContains(c.Message, "198.51.100.66") {
		t.Errorf("condition: %s", c.Message)
	}
	e.waitEvent(e.ns, "web", "AddressOutsidePool", "198.51.100.66")
	e.eventually("pool reports addresses outside its ranges", 20*time.Second, func() bool {
		p := e.getPool("p")
		oc := poolCondition(p, v1beta1.ConditionAddressesOutsideRanges)
		return p.Status.OutsideRanges == 1 && oc != nil && oc.Status == metav1.ConditionTrue
	})
	if got := ips(e.get("web")); !slices.Equal(got, []string{"198.51.100.66"}) {
		t.Fatalf("a shrunk pool took the address: %v", got)
	}
	// an invalid edit is refused by the API server; the address stays
	_, err := e.herald.HeraldV1beta1().IPAddressPools().Update(e.ctx, func() *v1beta1.IPAddressPool {
		p := e.getPool("p")
		p.Spec.Addresses = []string{"garbage"}
		return p
	}(), metav1.UpdateOptions{})
	if err == nil {
		t.Error("an invalid pool edit was accepted")
	}
}

func TestDeletedPoolHeldByFinalizerUntilLastServiceGoes(t *testing.T) {
	e := newEnv(t)
	e.pool("doomed", nil, "198.51.100.64/30")
	e.pool("other", nil, "198.51.100.128/30")
	e.startController(controller.Options{})
	e.svc("web", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "doomed" })
	e.waitIPs("web", "198.51.100.64")
	e.eventually("finalizer added", 20*time.Second, func() bool {
		return slices.Contains(e.getPool("doomed").Finalizers, v1beta1.PoolProtectionFinalizer)
	})
	if err := e.herald.HeraldV1beta1().IPAddressPools().Delete(e.ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitEvent("", "doomed", "DeletionWaits", "1 Service")
	e.settle("other")
	if p := e.getPool("doomed"); p.DeletionTimestamp == nil {
		t.Fatal("pool not being deleted")
	}
	if got := ips(e.get("web")); !slices.Equal(got, []string{"198.51.100.64"}) {
		t.Fatalf("deleting the pool took the address: %v", got)
	}
	// a closing pool hands out nothing new
	e.svc("late", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "doomed" })
	e.waitCondition("late", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolNotAllowed")
	e.deleteSvc("late")
	e.deleteSvc("web")
	e.eventually("pool gone", 20*time.Second, func() bool {
		_, err := e.herald.HeraldV1beta1().IPAddressPools().Get(e.ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestAdvertisementNamingMissingPoolIsReported(t *testing.T) {
	e := newEnv(t)
	e.pool("p", nil, "198.51.100.64/30")
	e.startController(controller.Options{})
	_, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "adv"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"p", "missing"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.eventually("Valid=False on the advertisement", 20*time.Second, func() bool {
		a, err := e.herald.HeraldV1beta1().L2Advertisements().Get(e.ctx, "adv", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range a.Status.Conditions {
			if c.Type == v1beta1.ConditionValid && c.Status == metav1.ConditionFalse && c.Reason == "PoolNotFound" &&
				stringsContains(c.Message, "spec.ipAddressPools[1]") {
				return true
			}
		}
		return false
	})
	e.waitEvent("", "adv", "PoolNotFound", "missing")
}
