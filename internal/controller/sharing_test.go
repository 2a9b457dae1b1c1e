package controller_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// shared returns a mutation giving a Service a sharing key, one port and,
// optionally, ETP Local with a selector.
func shared(key string, proto corev1.Protocol, port int32, local bool, selector string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationAllowSharedIP] = key
		s.Spec.Ports = []corev1.ServicePort{{Name: "p", Protocol: proto, Port: port}}
		if local {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.Selector = map[string]string{"app": selector}
		}
	}
}

func TestSharing(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29")
	e.startController(controller.Options{})
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP

	e.svc("dns-tcp", shared("dns", tcp, 53, false, ""))
	first := e.waitAnyIPs("dns-tcp", 1)[0]
	e.svc("dns-udp", shared("dns", udp, 53, false, ""))
	e.svc("http", shared("dns", tcp, 80, false, ""))
	e.waitIPs("dns-udp", first)
	e.waitIPs("http", first)

	// same key, same port and protocol: not compatible, gets its own address
	e.svc("clash", shared("dns", tcp, 53, false, ""))
	if got := e.waitAnyIPs("clash", 1)[0]; got == first {
		t.Errorf("a Service with a colliding port shares %s", got)
	}
	// asking for the taken address explicitly fails with a reason
	e.svc("clash-requested", func(s *corev1.Service) {
		shared("dns", tcp, 80, false, "")(s)
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = first
	})
	e.waitCondition("clash-requested", v1beta1.ConditionAllocated, metav1.ConditionFalse, "IncompatibleSharing")

	// no sharing key: never shares
	e.svc("lonely", func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080 })
	if got := e.waitAnyIPs("lonely", 1)[0]; got == first {
		t.Errorf("a Service without a key shares %s", got)
	}
}

func TestSharingWithLocalTrafficPolicy(t *testing.T) {
	e := newEnv(t)
	e.pool("main", nil, "198.51.100.64/29")
	e.startController(controller.Options{})
	tcp := corev1.ProtocolTCP
	e.svc("local-a", shared("k", tcp, 80, true, "web"))
	addr := e.waitAnyIPs("local-a", 1)[0]
	e.svc("local-same-selector", shared("k", tcp, 443, true, "web"))
	e.waitIPs("local-same-selector", addr)
	// different pods: the speakers announce it where every Service has a
	// local endpoint
	e.svc("local-other-selector", shared("k", tcp, 8443, true, "api"))
	e.waitIPs("local-other-selector", addr)
	e.svc("cluster-policy", shared("k", tcp, 9443, false, ""))
	if got := e.waitAnyIPs("cluster-policy", 1)[0]; got == addr {
		t.Errorf("cluster-policy shares %s with ETP Local Services", got)
	}
}
