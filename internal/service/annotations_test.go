package service

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// annotationCase is one Service's annotations and what its request must say.
type annotationCase struct {
	name        string
	annotations map[string]string
	ignore      bool // Annotations.IgnoreMetalLB
	pool, key   string
	ips         []string
	errPart     string
	inUse       []Translation
}

// forEachForm builds, for one Herald annotation, the cases every MetalLB
// form must pass: alone, with the Herald name agreeing and disagreeing,
// with the other MetalLB form, and switched off.
func forEachForm(herald string, value, other string, set func(c *annotationCase, v string)) []annotationCase {
	var out []annotationCase
	for _, ml := range metalLBNames(herald) {
		alone := annotationCase{name: ml + " alone", annotations: map[string]string{ml: value},
			inUse: []Translation{{MetalLB: ml, Herald: herald, Value: value}}}
		set(&alone, value)
		agree := annotationCase{name: ml + " agreeing with " + herald, annotations: map[string]string{ml: value, herald: " " + value + " "}}
		set(&agree, value)
		heraldWins := annotationCase{name: ml + " disagreeing with " + herald, annotations: map[string]string{ml: value, herald: other},
			errPart: "disagree; keep only " + herald}
		ignored := annotationCase{name: ml + " ignored", annotations: map[string]string{ml: value}, ignore: true}
		ignoredWithHerald := annotationCase{name: ml + " ignored beside " + herald, annotations: map[string]string{ml: value, herald: other}, ignore: true}
		set(&ignoredWithHerald, other)
		out = append(out, alone, agree, heraldWins, ignored, ignoredWithHerald)
	}
	both := metalLBNames(herald)
	same := annotationCase{name: "both MetalLB forms of " + herald + " agreeing", annotations: map[string]string{both[0]: value, both[1]: value},
		inUse: []Translation{{MetalLB: both[0], Herald: herald, Value: value}}}
	set(&same, value)
	differ := annotationCase{name: "both MetalLB forms of " + herald + " disagreeing", annotations: map[string]string{both[0]: value, both[1]: other},
		errPart: both[0] + ` ("` + value + `") and ` + both[1]}
	all := annotationCase{name: "all three forms of " + herald, annotations: map[string]string{both[0]: value, both[1]: value, herald: value}}
	set(&all, value)
	return append(out, same, differ, all)
}

func TestMetalLBAnnotations(t *testing.T) {
	var cases []annotationCase
	cases = append(cases, forEachForm(v1beta1.AnnotationAddressPool, "l2", "bgp", func(c *annotationCase, v string) { c.pool = v })...)
	cases = append(cases, forEachForm(v1beta1.AnnotationAllowSharedIP, "k1", "k2", func(c *annotationCase, v string) { c.key = v })...)
	cases = append(cases, forEachForm(v1beta1.AnnotationLoadBalancerIPs, "198.51.100.70,2001:db8::70", "198.51.100.71",
		func(c *annotationCase, v string) { c.ips = strings.Split(v, ",") })...)
	cases = append(cases,
		annotationCase{name: "MetalLB IPs and spec.loadBalancerIP", annotations: map[string]string{MetalLBLoadBalancerIPs: "198.51.100.70"},
			errPart: "both the " + MetalLBLoadBalancerIPs + " annotation and spec.loadBalancerIP"},
		annotationCase{name: "MetalLB IPs garbage", annotations: map[string]string{LegacyMetalLBLoadBalancerIPs: "web"},
			errPart: `annotation ` + LegacyMetalLBLoadBalancerIPs + `: "web" is not an IP address`},
		annotationCase{name: "every MetalLB annotation at once", annotations: map[string]string{
			MetalLBAddressPool: "l2", LegacyMetalLBAllowSharedIP: "k", MetalLBLoadBalancerIPs: "198.51.100.70"},
			pool: "l2", key: "k", ips: []string{"198.51.100.70"},
			inUse: []Translation{
				{MetalLB: MetalLBAddressPool, Herald: v1beta1.AnnotationAddressPool, Value: "l2"},
				{MetalLB: LegacyMetalLBAllowSharedIP, Herald: v1beta1.AnnotationAllowSharedIP, Value: "k"},
				{MetalLB: MetalLBLoadBalancerIPs, Herald: v1beta1.AnnotationLoadBalancerIPs, Value: "198.51.100.70"}}},
		annotationCase{name: "Herald pool with MetalLB sharing key", annotations: map[string]string{
			v1beta1.AnnotationAddressPool: "l2", MetalLBAllowSharedIP: "k"}, pool: "l2", key: "k",
			inUse: []Translation{{MetalLB: MetalLBAllowSharedIP, Herald: v1beta1.AnnotationAllowSharedIP, Value: "k"}}},
	)
	for _, c := range cases {
		s := svc(func(s *corev1.Service) {
			s.Annotations = c.annotations
			if strings.Contains(c.name, "spec.loadBalancerIP") {
				s.Spec.LoadBalancerIP = "198.51.100.70"
			}
		})
		a := Annotations{IgnoreMetalLB: c.ignore}
		req, err := a.Request(s, nil)
		if c.errPart != "" {
			var re *RequestError
			if err == nil || !strings.Contains(err.Error(), c.errPart) || !asRequestError(err, &re) {
				t.Errorf("%s: err = %v, want a RequestError containing %q", c.name, err, c.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var ips []string
		for _, ip := range req.RequestedIPs {
			ips = append(ips, ip.String())
		}
		if req.Pool != c.pool || req.SharingKey != c.key || !reflect.DeepEqual(ips, c.ips) {
			t.Errorf("%s: pool %q key %q ips %v, want %q %q %v", c.name, req.Pool, req.SharingKey, ips, c.pool, c.key, c.ips)
		}
		if got := a.MetalLBInUse(s); !reflect.DeepEqual(got, c.inUse) {
			t.Errorf("%s: MetalLBInUse = %+v, want %+v", c.name, got, c.inUse)
		}
	}
}

// The package-level Request reads MetalLB's names (the default).
func TestRequestDefaultReadsMetalLB(t *testing.T) {
	s := svc(func(s *corev1.Service) { s.Annotations[LegacyMetalLBLoadBalancerIPs] = "2001:db8::7" })
	req, err := Annotations{}.Request(s, nil)
	if err != nil || len(req.RequestedIPs) != 1 || req.RequestedIPs[0] != netip.MustParseAddr("2001:db8::7") {
		t.Errorf("Request = %+v, %v", req.RequestedIPs, err)
	}
}

func TestAssignedByMetalLB(t *testing.T) {
	withIngress := func(mutate func(*corev1.Service)) *corev1.Service {
		return svc(func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.70"}}
			mutate(s)
		})
	}
	cases := []struct {
		name     string
		svc      *corev1.Service
		pool     string
		assigned bool
	}{
		{"annotation", withIngress(func(s *corev1.Service) { s.Annotations[MetalLBAllocatedFromPool] = "l2" }), "l2", true},
		{"legacy annotation", withIngress(func(s *corev1.Service) { s.Annotations[LegacyMetalLBAllocatedFromPool] = "old" }), "old", true},
		{"field manager", withIngress(func(s *corev1.Service) {
			s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: MetalLBControllerManager, Subresource: "status"}}
		}), "", true},
		{"field manager of the spec only", withIngress(func(s *corev1.Service) {
			s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: MetalLBControllerManager}}
		}), "", false},
		{"already Herald's", withIngress(func(s *corev1.Service) {
			s.Annotations[MetalLBAllocatedFromPool] = "l2"
			s.Annotations[v1beta1.AnnotationAllocatedFromPool] = "l2"
		}), "", false},
		{"no address", svc(func(s *corev1.Service) { s.Annotations[MetalLBAllocatedFromPool] = "l2" }), "", false},
		{"neither", withIngress(func(*corev1.Service) {}), "", false},
	}
	for _, c := range cases {
		pool, ok := AssignedByMetalLB(c.svc)
		if pool != c.pool || ok != c.assigned {
			t.Errorf("%s: AssignedByMetalLB = %q, %v; want %q, %v", c.name, pool, ok, c.pool, c.assigned)
		}
	}
}
