package controller_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/service"
)

func TestClassHandling(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29")
	e.startController(controller.Options{})
	e.svc("foreign", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr("example.com/other") })
	e.svc("own", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr(v1beta1.LoadBalancerClass) })
	e.svc("none", nil)
	none := e.waitAnyIPs("none", 1)
	own := e.waitAnyIPs("own", 1)
	if none[0] == own[0] {
		t.Errorf("two Services without a sharing key got %s", none[0])
	}
	e.eventually("pool annotation", 10*time.Second, func() bool {
		return e.get("own").Annotations[v1beta1.AnnotationAllocatedFromPool] == "main"
	})
	e.waitCondition("own", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
	e.settle("main")
	foreign := e.get("foreign")
	if len(foreign.Status.LoadBalancer.Ingress) > 0 || len(foreign.Status.Conditions) > 0 || foreign.Annotations[v1beta1.AnnotationAllocatedFromPool] != "" {
		t.Errorf("a Service of another class was written to: %+v", foreign.Status)
	}
	for _, mf := range foreign.ManagedFields {
		if mf.Manager == controller.FieldManager {
			t.Errorf("Herald's field manager appears on a foreign Service")
		}
	}
	if r := e.eventReasons(e.ns, "foreign"); len(r) > 0 {
		t.Errorf("events on a foreign Service: %v", r)
	}
	e.waitEvent(e.ns, "none", "EnsuringLoadBalancer")
	e.waitEvent(e.ns, "none", "EnsuredLoadBalancer", none[0], "main")
}

func TestOwnClassOnly(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29")
	e.startController(controller.Options{Class: service.Class{OwnClassOnly: true}})
	e.svc("none", nil)
	e.svc("own", func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr(v1beta1.LoadBalancerClass) })
	e.waitIPs("own", "198.51.100.64")
	if got := ips(e.get("none")); len(got) != 0 {
		t.Errorf("--lb-class-only served a Service without a class: %v", got)
	}
}

func TestReleaseOnDeleteServesPendingService(t *testing.T) {
	e := newEnv(t)
	e.pool("one", nil, "198.51.100.70-198.51.100.70")
	e.startController(controller.Options{})
	e.svc("first", nil)
	e.waitIPs("first", "198.51.100.70")
	e.svc("second", nil)
	c := e.waitCondition("second", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolExhausted")
	if c.Message == "" {
		t.Error("PoolExhausted without a message")
	}
	e.waitEvent(e.ns, "second", "SyncLoadBalancerFailed", "PoolExhausted")
	e.deleteSvc("first")
	e.waitEvent(e.ns, "first", "DeletingLoadBalancer", "198.51.100.70")
	e.waitIPs("second", "198.51.100.70")
	e.waitCondition("second", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
}

func TestReleaseOnTypeChangeRemovesHeraldStatus(t *testing.T) {
	e := newEnv(t)
	e.pool("one", nil, "198.51.100.70-198.51.100.70")
	e.startController(controller.Options{})
	e.svc("web", nil)
	e.waitIPs("web", "198.51.100.70")
	e.eventually("annotation", 10*time.Second, func() bool {
		return e.get("web").Annotations[v1beta1.AnnotationAllocatedFromPool] == "one"
	})
	e.updateSvc("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP; s.Spec.Ports[0].NodePort = 0 })
	e.eventually("Herald status removed", 20*time.Second, func() bool {
		s := e.get("web")
		return len(s.Status.LoadBalancer.Ingress) == 0 && len(s.Status.Conditions) == 0 && s.Annotations[v1beta1.AnnotationAllocatedFromPool] == ""
	})
	e.waitEvent(e.ns, "web", "DeletingLoadBalancer", "198.51.100.70")
	e.svc("next", nil)
	e.waitIPs("next", "198.51.100.70")
}

// Herald's status writes are patches that name only its own fields: a
// condition another controller keeps on the Service survives Herald's
// assignment and Herald's cleanup, and only Herald's conditions and
// ingress go when the Service stops being a LoadBalancer.
func TestStatusWritesKeepOtherControllersConditions(t *testing.T) {
	e := newEnv(t)
	e.pool("one", nil, "198.51.100.71-198.51.100.71")
	e.svc("web", nil)
	other := metav1.Condition{Type: "example.com/Checked", Status: metav1.ConditionTrue, Reason: "Checked", Message: "by another controller",
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	s := e.get("web")
	s.Status.Conditions = append(s.Status.Conditions, other)
	if _, err := e.kube.CoreV1().Services(e.ns).UpdateStatus(e.ctx, s, metav1.UpdateOptions{FieldManager: "example"}); err != nil {
		t.Fatal(err)
	}
	hasOther := func(s *corev1.Service) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, other.Type)
		return c != nil && c.Message == other.Message
	}
	e.startController(controller.Options{})
	e.waitIPs("web", "198.51.100.71")
	e.waitCondition("web", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
	if s := e.get("web"); !hasOther(s) {
		t.Fatalf("the other controller's condition is gone after Herald's assignment: %+v", s.Status.Conditions)
	}
	e.updateSvc("web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP; s.Spec.Ports[0].NodePort = 0 })
	e.eventually("Herald's status removed", 20*time.Second, func() bool {
		s := e.get("web")
		return len(s.Status.LoadBalancer.Ingress) == 0 && apimeta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionAllocated) == nil &&
			apimeta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionAnnounced) == nil
	})
	if s := e.get("web"); !hasOther(s) || len(s.Status.Conditions) != 1 {
		t.Errorf("after Herald's cleanup the conditions are %+v, want only the other controller's", s.Status.Conditions)
	}
}

func TestNoNodePortsNeeded(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29")
	e.startController(controller.Options{})
	e.svc("web", func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr(false) })
	s := e.waitIPs("web", "198.51.100.64")
	if s.Spec.Ports[0].NodePort != 0 {
		t.Errorf("node port allocated: %d", s.Spec.Ports[0].NodePort)
	}
}

func TestDualStack(t *testing.T) {
	e := newEnv(t)
	e.pool("dual", nil, "198.51.100.64/30", "2001:db8:1::64-2001:db8:1::67")
	e.pool("v4only", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "198.51.100.128/30")
	e.startController(controller.Options{})
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	family := func(policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.IPFamilyPolicy = &policy; s.Spec.IPFamilies = fams }
	}
	e.svc("single-v6", family(corev1.IPFamilyPolicySingleStack, v6))
	e.svc("prefer-v4v6", family(corev1.IPFamilyPolicyPreferDualStack, v4, v6))
	e.svc("prefer-v6v4", family(corev1.IPFamilyPolicyPreferDualStack, v6, v4))
	e.svc("require", family(corev1.IPFamilyPolicyRequireDualStack, v4, v6))
	e.svc("prefer-from-v4-pool", func(s *corev1.Service) {
		family(corev1.IPFamilyPolicyPreferDualStack, v4, v6)(s)
		s.Annotations[v1beta1.AnnotationAddressPool] = "v4only"
	})
	e.svc("require-from-v4-pool", func(s *corev1.Service) {
		family(corev1.IPFamilyPolicyRequireDualStack, v4, v6)(s)
		s.Annotations[v1beta1.AnnotationAddressPool] = "v4only"
	})
	is6 := func(s string) bool { return len(s) > 0 && s[0] == '2' && s[4] == ':' }
	checkFamilies := func(name string, want ...bool) {
		got := e.waitAnyIPs(name, len(want))
		for i, w := range want {
			if is6(got[i]) != w {
				t.Errorf("%s: addresses %v, want IPv6 flags %v", name, got, want)
			}
		}
	}
	checkFamilies("single-v6", true)
	checkFamilies("prefer-v4v6", false, true)
	checkFamilies("prefer-v6v4", true, false)
	checkFamilies("require", false, true)
	checkFamilies("prefer-from-v4-pool", false)
	e.waitCondition("require-from-v4-pool", v1beta1.ConditionAllocated, metav1.ConditionFalse, "NoPoolMatches")
}

func TestRequestedIPs(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29", "2001:db8:1::64-2001:db8:1::67")
	e.startController(controller.Options{})
	e.svc("by-annotation", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.69" })
	e.svc("by-spec", func(s *corev1.Service) { s.Spec.LoadBalancerIP = "198.51.100.68" })
	e.svc("both", func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.67"
		s.Spec.LoadBalancerIP = "198.51.100.67"
	})
	e.svc("dual", func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "2001:db8:1::66,198.51.100.66"
	})
	e.waitIPs("by-annotation", "198.51.100.69")
	e.waitIPs("by-spec", "198.51.100.68")
	e.waitIPs("dual", "198.51.100.66", "2001:db8:1::66")
	c := e.waitCondition("both", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	if !containsAll(c.Message, "loadBalancerIP", v1beta1.AnnotationLoadBalancerIPs) {
		t.Errorf("message: %s", c.Message)
	}
	e.waitEvent(e.ns, "both", "SyncLoadBalancerFailed", "InvalidRequest")
	e.svc("taken", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.69" })
	e.waitCondition("taken", v1beta1.ConditionAllocated, metav1.ConditionFalse, "RequestedIPInUse")
	e.svc("outside", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.200" })
	e.waitCondition("outside", v1beta1.ConditionAllocated, metav1.ConditionFalse, "RequestedIPNotInPool")
	// changing the request moves the address; nothing else does
	e.updateSvc("by-annotation", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.70" })
	e.waitIPs("by-annotation", "198.51.100.70")
	// the freed address serves the Service that wanted it
	e.waitIPs("taken", "198.51.100.69")
}

func TestPoolChoice(t *testing.T) {
	e := newEnv(t)
	e.pool("low-priority", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(20))}
	}, "198.51.100.64/30")
	e.pool("high-priority", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(10))}
	}, "198.51.100.68/30")
	e.pool("manual", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "198.51.100.72/30")
	e.pool("for-web", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(1)),
			ServiceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}}
	}, "198.51.100.76/30")
	e.pool("for-other-ns", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(0)), Namespaces: []string{"somewhere-else"}}
	}, "198.51.100.80/30")
	e.startController(controller.Options{})
	e.svc("plain", nil)
	e.svc("web", func(s *corev1.Service) { s.Labels = map[string]string{"app": "web"} })
	e.svc("manual", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "manual" })
	e.svc("missing-pool", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "nope" })
	e.waitIPs("plain", "198.51.100.68")
	e.waitIPs("web", "198.51.100.76")
	e.waitIPs("manual", "198.51.100.72")
	e.waitCondition("missing-pool", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolNotFound")
	// a pool's priority changing moves nothing
	e.updatePool("low-priority", func(p *v1beta1.IPAddressPool) { p.Spec.ServiceAllocation.Priority = ptr(int32(1)) })
	e.waitPoolObserved("low-priority") // else "after" may be allocated by the old priorities (CI)
	e.svc("after", nil)
	e.waitIPs("after", "198.51.100.64")
	if got := ips(e.get("plain")); !slices.Equal(got, []string{"198.51.100.68"}) {
		t.Errorf("a priority change moved an address: %v", got)
	}
}

func TestExhaustedPoolGrowsAndServesPending(t *testing.T) {
	e := newEnv(t)
	e.pool("small", nil, "198.51.100.64/31")
	e.startController(controller.Options{})
	// One at a time: synced in parallel, c could take b's address.
	e.svc("a", nil)
	e.waitAnyIPs("a", 1)
	e.svc("b", nil)
	e.waitAnyIPs("b", 1)
	e.svc("c", nil)
	e.waitCondition("c", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolExhausted")
	e.updatePool("small", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/30"} })
	e.waitIPs("c", "198.51.100.66")
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !stringsContains(s, p) {
			return false
		}
	}
	return true
}
