package controller_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/service"
)

// syncBuffer is a log sink the controller's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// metallbService creates a Service as MetalLB left it: its address in the
// status, written by MetalLB's field manager, and (unless pool is empty)
// MetalLB's ip-allocated-from-pool annotation.
func (e *env) metallbService(name, ip, pool string, mutate func(*corev1.Service)) {
	e.t.Helper()
	s := e.svc(name, func(s *corev1.Service) {
		if pool != "" {
			s.Annotations[service.MetalLBAllocatedFromPool] = pool
		}
		if mutate != nil {
			mutate(s)
		}
	})
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: ptr(corev1.LoadBalancerIPModeVIP)}}
	if _, err := e.kube.CoreV1().Services(e.ns).UpdateStatus(e.ctx, s, metav1.UpdateOptions{FieldManager: service.MetalLBControllerManager}); err != nil {
		e.t.Fatal(err)
	}
}

// TestAdoptsMetalLBAddressesThatFit starts the controller (no speakers,
// no MetalLB running) on Services whose status MetalLB's controller
// wrote: each Service whose address fits keeps it; the younger of two
// claiming one address, one outside every Herald pool and one in a pool
// that does not admit it get new addresses, with an event saying why, and
// the log counts both. The live takeover from a running MetalLB is
// e2e/metallb's TestLiveTakeoverFromMetalLBKeepsServing.
func TestAdoptsMetalLBAddressesThatFit(t *testing.T) {
	e := newEnv(t)
	e.pool("l2", nil, "198.51.100.0/28")
	e.pool("other-team", func(s *v1beta1.IPAddressPoolSpec) {
		s.ServiceAllocation = &v1beta1.ServiceAllocation{Namespaces: []string{"someone-else"}}
	}, "198.51.100.32/28")
	e.metallbService("a-annotated", "198.51.100.5", "l2", nil)
	e.metallbService("b-manager-only", "198.51.100.6", "", nil)
	e.metallbService("c-older", "198.51.100.7", "default", nil)
	e.metallbService("d-younger", "198.51.100.7", "default", nil)
	shared := func(port int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Annotations[service.MetalLBAllowSharedIP] = "dns"
			s.Spec.Ports[0].Port = port
		}
	}
	e.metallbService("e-shared", "198.51.100.8", "l2", shared(53))
	e.metallbService("f-shared", "198.51.100.8", "l2", shared(853))
	e.metallbService("g-outside", "198.51.100.200", "old", nil)
	e.metallbService("h-not-admitted", "198.51.100.33", "old", nil)
	e.metallbService("i-requested", "198.51.100.9", "l2", func(s *corev1.Service) {
		s.Annotations[service.LegacyMetalLBLoadBalancerIPs] = "198.51.100.9"
	})
	e.metallbService("j-invalid", "198.51.100.10", "l2", func(s *corev1.Service) {
		s.Annotations[service.MetalLBAddressPool] = "l2"
		s.Annotations[v1beta1.AnnotationAddressPool] = "other-team"
	})

	logs := &syncBuffer{}
	e.startController(controller.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})

	for name, ip := range map[string]string{"a-annotated": "198.51.100.5", "b-manager-only": "198.51.100.6", "c-older": "198.51.100.7",
		"e-shared": "198.51.100.8", "f-shared": "198.51.100.8", "i-requested": "198.51.100.9"} {
		e.waitCondition(name, v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
		e.waitIPs(name, ip)
		e.waitEvent(e.ns, name, "AdoptedFromMetalLB", ip, "IPAddressPool l2")
	}
	// A request that cannot be parsed keeps what it holds, and says why.
	e.waitCondition("j-invalid", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	e.waitIPs("j-invalid", "198.51.100.10")
	e.waitEvent(e.ns, "j-invalid", "AdoptedFromMetalLB", "198.51.100.10", "keeps what it holds")
	taken := []string{"198.51.100.5", "198.51.100.6", "198.51.100.7", "198.51.100.8", "198.51.100.9", "198.51.100.10"}
	for name, why := range map[string]string{
		"d-younger":      "held by Service " + e.ns + "/c-older",
		"g-outside":      "in no address pool",
		"h-not-admitted": "does not admit it",
	} {
		e.waitEvent(e.ns, name, "NotAdoptedFromMetalLB", why, "a new address is allocated")
		e.waitCondition(name, v1beta1.ConditionAllocated, metav1.ConditionTrue, "Allocated")
		got := e.waitAnyIPs(name, 1)[0]
		if slices.Contains(taken, got) || !strings.HasPrefix(got, "198.51.100.") {
			t.Errorf("%s got %s, which another Service holds or is outside pool l2", name, got)
		}
		taken = append(taken, got)
	}
	e.eventually("the takeover count in the log", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), `msg="took over addresses assigned by MetalLB" adopted=7 notAdopted=3`)
	})
	if n := strings.Count(logs.String(), `msg="adopted address from MetalLB"`); n != 7 {
		t.Errorf("%d adoption log lines, want one per adopted Service (7):\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `msg="address from MetalLB not adopted"`); n != 3 {
		t.Errorf("%d refusal log lines, want 3:\n%s", n, logs.String())
	}
	e.waitEvent(e.ns, "i-requested", "MetalLBAnnotation", service.LegacyMetalLBLoadBalancerIPs+" as "+v1beta1.AnnotationLoadBalancerIPs)
	if s := e.get("a-annotated"); s.Annotations[v1beta1.AnnotationAllocatedFromPool] != "l2" {
		e.eventually("a-annotated's Herald pool annotation", 10*time.Second, func() bool {
			return e.get("a-annotated").Annotations[v1beta1.AnnotationAllocatedFromPool] == "l2"
		})
	}
}

// TestMetalLBAnnotationsInController: MetalLB's names request an address
// and a pool, with a Normal event naming Herald's; a Service whose Herald
// and MetalLB annotations disagree gets an error, never a guess; with
// IgnoreMetalLB the MetalLB names are not read.
func TestMetalLBAnnotationsInController(t *testing.T) {
	e := newEnv(t)
	e.pool("l2", nil, "198.51.100.0/28")
	e.pool("bgp", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "198.51.100.16/28")
	e.startController(controller.Options{})
	e.svc("by-ip", func(s *corev1.Service) { s.Annotations[service.MetalLBLoadBalancerIPs] = "198.51.100.12" })
	e.svc("by-pool", func(s *corev1.Service) { s.Annotations[service.LegacyMetalLBAddressPool] = "bgp" })
	e.svc("disagree", func(s *corev1.Service) {
		s.Annotations[service.MetalLBAddressPool] = "bgp"
		s.Annotations[v1beta1.AnnotationAddressPool] = "l2"
	})
	e.waitIPs("by-ip", "198.51.100.12")
	e.waitEvent(e.ns, "by-ip", "MetalLBAnnotation", service.MetalLBLoadBalancerIPs+" as "+v1beta1.AnnotationLoadBalancerIPs)
	e.waitIPs("by-pool", "198.51.100.16")
	e.waitEvent(e.ns, "by-pool", "MetalLBAnnotation", service.LegacyMetalLBAddressPool+" as "+v1beta1.AnnotationAddressPool)
	c := e.waitCondition("disagree", v1beta1.ConditionAllocated, metav1.ConditionFalse, "InvalidRequest")
	if !strings.Contains(c.Message, "disagree") {
		t.Errorf("condition message %q does not say the annotations disagree", c.Message)
	}
	e.waitEvent(e.ns, "disagree", "SyncLoadBalancerFailed", v1beta1.AnnotationAddressPool, service.MetalLBAddressPool)
	if got := ips(e.get("disagree")); len(got) != 0 {
		t.Errorf("disagreeing Service got %v", got)
	}
}

func TestMetalLBAnnotationsIgnored(t *testing.T) {
	e := newEnv(t)
	e.pool("l2", nil, "198.51.100.0/28")
	e.startController(controller.Options{Annotations: service.Annotations{IgnoreMetalLB: true}})
	e.svc("by-ip", func(s *corev1.Service) { s.Annotations[service.MetalLBLoadBalancerIPs] = "198.51.100.12" })
	e.waitIPs("by-ip", "198.51.100.0")
	if slices.Contains(e.eventReasons(e.ns, "by-ip"), "MetalLBAnnotation") {
		t.Error("a MetalLBAnnotation event with IgnoreMetalLB")
	}
}
