package service

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Port is one protocol and port of a Service. An empty Protocol means TCP,
// the API server's default.
type Port struct {
	Protocol corev1.Protocol
	Port     int32
}

// Request is what one Service asks for: the allocator's input. It lives
// here, not in the allocator, so that the speaker, which reads Services
// through this package, does not link the controller's allocator.
type Request struct {
	// Key is "namespace/name".
	Key             string
	Namespace       string
	NamespaceLabels labels.Set
	// Labels are the Service's labels.
	Labels labels.Set
	// Families is spec.ipFamilies, primary first, as the API server resolved
	// it against the cluster.
	Families     []corev1.IPFamily
	FamilyPolicy corev1.IPFamilyPolicy
	// RequestedIPs come from herald.dev/loadBalancerIPs or
	// spec.loadBalancerIP: AddressCount of each family they list (one
	// when AddressCount is 0).
	RequestedIPs []netip.Addr
	// AddressCount is herald.dev/address-count: how many addresses of
	// each family the Service asks for, 1 to MaxAddressCount; 0 (the
	// annotation absent) means one.
	AddressCount int
	// Pool is herald.dev/address-pool; "" lets the allocator choose.
	Pool string
	// SharingKey is herald.dev/allow-shared-ip; "" means no sharing.
	SharingKey string
	Ports      []Port
	// ETPLocal is externalTrafficPolicy: Local.
	ETPLocal bool
	// Selector is spec.selector; Services sharing an address with
	// ETPLocal must have identical selectors.
	Selector map[string]string
}

// RequestError is a Service whose request contradicts itself or cannot be
// parsed; retrying does not help until the Service changes.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// Request translates a Service (and its namespace's labels) into what it
// asks for, reading the annotation names a allows (the zero Annotations
// read MetalLB's where Herald's are absent).
func (a Annotations) Request(svc *corev1.Service, namespaceLabels map[string]string) (Request, error) {
	pool, poolErr := a.lookup(svc, v1beta1.AnnotationAddressPool)
	sharing, sharingErr := a.lookup(svc, v1beta1.AnnotationAllowSharedIP)
	req := Request{
		Key:             svc.Namespace + "/" + svc.Name,
		Namespace:       svc.Namespace,
		NamespaceLabels: labels.Set(namespaceLabels),
		Labels:          labels.Set(svc.Labels),
		Families:        append([]corev1.IPFamily(nil), svc.Spec.IPFamilies...),
		Pool:            strings.TrimSpace(pool.value),
		SharingKey:      strings.TrimSpace(sharing.value),
		ETPLocal:        svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		Selector:        svc.Spec.Selector,
	}
	if svc.Spec.IPFamilyPolicy != nil {
		req.FamilyPolicy = *svc.Spec.IPFamilyPolicy
	}
	if len(req.Families) == 0 {
		req.Families = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	for _, p := range svc.Spec.Ports {
		req.Ports = append(req.Ports, Port{Protocol: p.Protocol, Port: p.Port})
	}
	ips, err := a.RequestedIPs(svc)
	req.RequestedIPs = ips
	count, countErr := AddressCount(svc)
	req.AddressCount = count
	for _, e := range []error{poolErr, sharingErr, countErr} {
		if e != nil {
			err = e
		}
	}
	return req, err
}

// MaxAddressCount is the largest herald.dev/address-count: enough to
// spread a Service's traffic over every node of a rack, few enough that
// one Service cannot drain a pool by a typo.
const MaxAddressCount = 16

// AddressCount parses herald.dev/address-count: 0 when it is absent, else
// a whole number from 1 to MaxAddressCount (anything else is a
// RequestError). MetalLB has no such annotation.
func AddressCount(svc *corev1.Service) (int, error) {
	v, ok := svc.Annotations[v1beta1.AnnotationAddressCount]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxAddressCount {
		return 0, &RequestError{Message: fmt.Sprintf("annotation %s: %q is not a whole number from 1 to %d",
			v1beta1.AnnotationAddressCount, v, MaxAddressCount)}
	}
	return n, nil
}

// RequestedIPs parses herald.dev/loadBalancerIPs (Annotations{}.RequestedIPs).
func RequestedIPs(svc *corev1.Service) ([]netip.Addr, error) {
	return Annotations{}.RequestedIPs(svc)
}

// RequestedIPs parses herald.dev/loadBalancerIPs (or, when a allows and
// it is absent, MetalLB's loadBalancerIPs annotation) or
// spec.loadBalancerIP. Setting both is an error, as is an entry that is
// not an IP address.
func (a Annotations) RequestedIPs(svc *corev1.Service) ([]netip.Addr, error) {
	ann, err := a.lookup(svc, v1beta1.AnnotationLoadBalancerIPs)
	if err != nil {
		return nil, err
	}
	spec := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	switch {
	case ann.present && spec != "":
		return nil, &RequestError{Message: fmt.Sprintf("both the %s annotation and spec.loadBalancerIP are set; use only %s (spec.loadBalancerIP is deprecated)", ann.from, v1beta1.AnnotationLoadBalancerIPs)}
	case spec != "":
		return parseIPs(spec, "spec.loadBalancerIP")
	case ann.present:
		return parseIPs(ann.value, "annotation "+ann.from)
	}
	return nil, nil
}

func parseIPs(list, where string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ip, err := netip.ParseAddr(part)
		if err != nil || ip.Zone() != "" {
			return nil, &RequestError{Message: fmt.Sprintf("%s: %q is not an IP address", where, part)}
		}
		out = append(out, ip.Unmap())
	}
	if len(out) == 0 {
		return nil, &RequestError{Message: fmt.Sprintf("%s is set but lists no address", where)}
	}
	return out, nil
}

// IngressIPs returns the addresses in the Service's status.loadBalancer,
// in order, skipping hostnames and entries that do not parse.
func IngressIPs(svc *corev1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, ip)
		}
	}
	return out
}
