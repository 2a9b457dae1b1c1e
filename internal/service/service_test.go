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

func svc(mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 443}}},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func class(s string) *string { return &s }

func TestIsOurs(t *testing.T) {
	cases := []struct {
		name    string
		svc     *corev1.Service
		own     bool
		want    bool
		wantOwn bool
	}{
		{"no class", svc(nil), false, true, false},
		{"own class", svc(func(s *corev1.Service) { s.Spec.LoadBalancerClass = class(v1beta1.LoadBalancerClass) }), false, true, true},
		{"foreign class", svc(func(s *corev1.Service) { s.Spec.LoadBalancerClass = class("example.com/other") }), false, false, false},
		{"cluster IP", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }), false, false, false},
		{"node port", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), false, false, false},
		{"nil", nil, false, false, false},
	}
	for _, c := range cases {
		if got := (Class{}).IsOurs(c.svc); got != c.want {
			t.Errorf("%s: IsOurs = %v", c.name, got)
		}
		if got := (Class{OwnClassOnly: true}).IsOurs(c.svc); got != c.wantOwn {
			t.Errorf("%s: IsOurs(--lb-class-only) = %v", c.name, got)
		}
	}
}

func TestRequest(t *testing.T) {
	s := svc(func(s *corev1.Service) {
		s.Labels = map[string]string{"app": "web"}
		s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.70, 2001:db8:1::70"
		s.Annotations[v1beta1.AnnotationAddressPool] = "l2"
		s.Annotations[v1beta1.AnnotationAllowSharedIP] = "key"
		pol := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy = &pol
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": "web"}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Protocol: corev1.ProtocolUDP, Port: 53})
	})
	req, err := Annotations{}.Request(s, map[string]string{"team": "a"})
	if err != nil {
		t.Fatal(err)
	}
	want := Request{
		Key: "shop/web", Namespace: "shop", NamespaceLabels: map[string]string{"team": "a"}, Labels: map[string]string{"app": "web"},
		Families: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}, FamilyPolicy: corev1.IPFamilyPolicyRequireDualStack,
		RequestedIPs: []netip.Addr{netip.MustParseAddr("198.51.100.70"), netip.MustParseAddr("2001:db8:1::70")},
		Pool:         "l2", SharingKey: "key", ETPLocal: true, Selector: map[string]string{"app": "web"},
		Ports: []Port{{Protocol: corev1.ProtocolTCP, Port: 443}, {Protocol: corev1.ProtocolUDP, Port: 53}},
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("request\n got %+v\nwant %+v", req, want)
	}
}

func TestRequestedIPs(t *testing.T) {
	cases := []struct {
		name, annotation, spec string
		hasAnnotation          bool
		want                   []string
		errPart                string
	}{
		{name: "none"},
		{name: "spec", spec: "198.51.100.70", want: []string{"198.51.100.70"}},
		{name: "annotation two", annotation: "198.51.100.70,2001:db8::1", hasAnnotation: true, want: []string{"198.51.100.70", "2001:db8::1"}},
		{name: "both", annotation: "198.51.100.70", hasAnnotation: true, spec: "198.51.100.71", errPart: "both"},
		{name: "garbage", annotation: "198.51.100.70,web", hasAnnotation: true, errPart: `"web" is not an IP address`},
		{name: "empty annotation", annotation: " , ", hasAnnotation: true, errPart: "lists no address"},
		{name: "zone", annotation: "fe80::1%eth0", hasAnnotation: true, errPart: "is not an IP address"},
	}
	for _, c := range cases {
		s := svc(func(s *corev1.Service) {
			s.Spec.LoadBalancerIP = c.spec
			if c.hasAnnotation {
				s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = c.annotation
			}
		})
		got, err := RequestedIPs(s)
		if c.errPart != "" {
			var re *RequestError
			if err == nil || !strings.Contains(err.Error(), c.errPart) || !asRequestError(err, &re) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		var gs []string
		for _, ip := range got {
			gs = append(gs, ip.String())
		}
		if !reflect.DeepEqual(gs, c.want) {
			t.Errorf("%s: %v, want %v", c.name, gs, c.want)
		}
	}
}

func asRequestError(err error, target **RequestError) bool {
	re, ok := err.(*RequestError)
	*target = re
	return ok
}

func TestIngressIPs(t *testing.T) {
	s := svc(func(s *corev1.Service) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.70"}, {Hostname: "lb.example"}, {IP: "2001:db8::1"}}
	})
	got := IngressIPs(s)
	if len(got) != 2 || got[0].String() != "198.51.100.70" || got[1].String() != "2001:db8::1" {
		t.Errorf("%v", got)
	}
}

func TestAddressCount(t *testing.T) {
	cases := []struct {
		value   string
		present bool
		want    int
		bad     bool
	}{
		{present: false, want: 0},
		{value: "1", present: true, want: 1},
		{value: " 3 ", present: true, want: 3},
		{value: "16", present: true, want: MaxAddressCount},
		{value: "17", present: true, bad: true},
		{value: "0", present: true, bad: true},
		{value: "-2", present: true, bad: true},
		{value: "", present: true, bad: true},
		{value: "three", present: true, bad: true},
		{value: "2.5", present: true, bad: true},
		{value: "0x3", present: true, bad: true},
	}
	for _, c := range cases {
		s := svc(func(s *corev1.Service) {
			if c.present {
				s.Annotations[v1beta1.AnnotationAddressCount] = c.value
			}
		})
		got, err := AddressCount(s)
		if c.bad {
			var re *RequestError
			if err == nil || !asRequestError(err, &re) || !strings.Contains(err.Error(), v1beta1.AnnotationAddressCount) {
				t.Errorf("%q: err = %v, want a RequestError naming the annotation", c.value, err)
			}
			if _, rerr := (Annotations{}).Request(s, nil); rerr == nil {
				t.Errorf("%q: Request accepted an invalid count", c.value)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: AddressCount = %d, %v; want %d", c.value, got, err, c.want)
		}
		if req, err := (Annotations{}).Request(s, nil); err != nil || req.AddressCount != c.want {
			t.Errorf("%q: Request.AddressCount = %d, %v; want %d", c.value, req.AddressCount, err, c.want)
		}
	}
}
