package controller_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// counted asks for n addresses per family and, with two families,
// RequireDualStack in that order.
func counted(n string, fams ...corev1.IPFamily) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationAddressCount] = n
		if len(fams) == 2 {
			p := corev1.IPFamilyPolicyRequireDualStack
			s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, fams
		}
	}
}

// A Service with herald.dev/address-count gets that many addresses of
// each family, published in order; the pool counts each; the events say
// how many; changing the count keeps what stays.
func TestAddressCount(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/28", "2001:db8:ff::/120") // 2001:db8:ff:: is reserved
	e.startController(controller.Options{ReleaseHold: time.Hour})

	e.svc("three", counted("3", corev1.IPv6Protocol, corev1.IPv4Protocol))
	e.waitIPs("three", "2001:db8:ff::1", "2001:db8:ff::2", "2001:db8:ff::3", "198.51.100.64", "198.51.100.65", "198.51.100.66")
	e.waitEvent(e.ns, "three", "EnsuredLoadBalancer", "3 addresses per family, 6 in all: 2001:db8:ff::1, 2001:db8:ff::2")
	cond := e.waitCondition("three", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
	if !strings.Contains(cond.Message, "3 addresses per family, 6 in all") {
		t.Errorf("Allocated condition: %q", cond.Message)
	}
	e.eventually("pool counts of three addresses per family", 20*time.Second, func() bool {
		s := e.getPool("main").Status
		return s.AssignedIPv4 == 3 && s.AvailableIPv4 == 13 && s.AssignedIPv6 == 3 && s.AvailableIPv6 == 252 // ::0 is reserved
	})

	// More keeps the addresses and adds the next ones; fewer keeps the
	// lowest.
	e.updateSvc("three", counted("4"))
	e.waitIPs("three", "2001:db8:ff::1", "2001:db8:ff::2", "2001:db8:ff::3", "2001:db8:ff::4",
		"198.51.100.64", "198.51.100.65", "198.51.100.66", "198.51.100.67")
	e.updateSvc("three", counted("2"))
	e.waitIPs("three", "2001:db8:ff::1", "2001:db8:ff::2", "198.51.100.64", "198.51.100.65")
	e.eventually("pool counts after the decrease", 20*time.Second, func() bool {
		s := e.getPool("main").Status
		return s.AssignedIPv4 == 2 && s.AssignedIPv6 == 2
	})
	// Released addresses are held back: the next Service gets others.
	e.svc("next", nil)
	if got := e.waitAnyIPs("next", 1)[0]; got == "198.51.100.66" || got == "198.51.100.67" {
		t.Errorf("next got %s, released moments ago", got)
	}

	// An invalid count is refused, naming the annotation; the Service
	// keeps what it holds.
	e.updateSvc("three", counted("many"))
	cond = e.waitCondition("three", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	if !strings.Contains(cond.Message, v1beta1.AnnotationAddressCount) {
		t.Errorf("InvalidRequest condition does not name the annotation: %q", cond.Message)
	}
	e.waitEvent(e.ns, "three", "SyncLoadBalancerFailed", "InvalidRequest", v1beta1.AnnotationAddressCount)
	e.waitIPs("three", "2001:db8:ff::1", "2001:db8:ff::2", "198.51.100.64", "198.51.100.65")

	// A new Service with an invalid count gets nothing.
	e.svc("zero", counted("0"))
	e.waitCondition("zero", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	e.waitEvent(e.ns, "zero", "SyncLoadBalancerFailed", `annotation herald.dev/address-count: "0" is not a whole number from 1 to 16`)
	if got := ips(e.get("zero")); len(got) != 0 {
		t.Errorf("zero got %v", got)
	}

	// Too few free addresses: nothing, and it says how many were asked.
	e.svc("big", counted("16"))
	e.waitCondition("big", v1beta1.ConditionAllocated, metav1.ConditionFalse, "PoolExhausted")
	e.waitEvent(e.ns, "big", "SyncLoadBalancerFailed", "PoolExhausted", "fewer than 16 free IPv4 addresses")
	if got := ips(e.get("big")); len(got) != 0 {
		t.Errorf("big got %v, want nothing (all or none)", got)
	}

	// Requested addresses must be as many as the count.
	e.svc("requested", func(s *corev1.Service) {
		counted("2")(s)
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.79"
	})
	cond = e.waitCondition("requested", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	if !strings.Contains(cond.Message, "request 2 of each family") {
		t.Errorf("requested: %q", cond.Message)
	}
	e.updateSvc("requested", func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.79, 198.51.100.78"
	})
	e.waitIPs("requested", "198.51.100.78", "198.51.100.79")
}

// Services sharing under one key with the same count share all their
// addresses; another count gets its own, with a SharingRefused event.
func TestAddressCountSharing(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/28")
	e.startController(controller.Options{})
	tcp := corev1.ProtocolTCP
	e.svc("web", func(s *corev1.Service) { counted("2")(s); shared("k", tcp, 80, false, "")(s) })
	e.waitIPs("web", "198.51.100.64", "198.51.100.65")
	e.svc("tls", func(s *corev1.Service) { counted("2")(s); shared("k", tcp, 443, false, "")(s) })
	e.waitIPs("tls", "198.51.100.64", "198.51.100.65")
	e.svc("odd", func(s *corev1.Service) { counted("3")(s); shared("k", tcp, 8080, false, "")(s) })
	e.waitIPs("odd", "198.51.100.66", "198.51.100.67", "198.51.100.68")
	e.waitEvent(e.ns, "odd", "SharingRefused", "different numbers of addresses per family (2 and 3")
	e.eventually("a shared address counted once", 20*time.Second, func() bool {
		return e.getPool("main").Status.AssignedIPv4 == 5
	})
}

// A restart restores several addresses per family from the status and
// writes nothing.
func TestAddressCountRestart(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/28", "2001:db8:ff::/120")
	stop := e.startController(controller.Options{})
	e.svc("three", counted("3", corev1.IPv4Protocol, corev1.IPv6Protocol))
	want := []string{"198.51.100.64", "198.51.100.65", "198.51.100.66", "2001:db8:ff::1", "2001:db8:ff::2", "2001:db8:ff::3"}
	e.waitIPs("three", want...)
	e.eventually("the pool annotation", 20*time.Second, func() bool {
		return e.get("three").Annotations[v1beta1.AnnotationAllocatedFromPool] == "main"
	})
	e.waitCondition("three", v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
	before := e.get("three").ResourceVersion
	stop()

	e.startController(controller.Options{})
	e.svc("sentinel", counted("3"))
	got := e.waitAnyIPs("sentinel", 3)
	for _, ip := range got {
		if slices.Contains(want, ip) {
			t.Errorf("the sentinel got %s, held by three", ip)
		}
	}
	if s := e.get("three"); !slices.Equal(ips(s), want) || s.ResourceVersion != before {
		t.Errorf("three after a restart: %v (resourceVersion %s, was %s), want %v unchanged", ips(s), s.ResourceVersion, before, want)
	}
}
