package service

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/allocator"
)

// RequestError is a Service whose request contradicts itself or cannot be
// parsed; retrying does not help until the Service changes.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// Request translates a Service (and its namespace's labels) into what it
// asks the allocator for.
func Request(svc *corev1.Service, namespaceLabels map[string]string) (allocator.Request, error) {
	req := allocator.Request{
		Key:             svc.Namespace + "/" + svc.Name,
		Namespace:       svc.Namespace,
		NamespaceLabels: labels.Set(namespaceLabels),
		Labels:          labels.Set(svc.Labels),
		Families:        append([]corev1.IPFamily(nil), svc.Spec.IPFamilies...),
		Pool:            strings.TrimSpace(svc.Annotations[v1beta1.AnnotationAddressPool]),
		SharingKey:      strings.TrimSpace(svc.Annotations[v1beta1.AnnotationAllowSharedIP]),
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
		req.Ports = append(req.Ports, allocator.Port{Protocol: p.Protocol, Port: p.Port})
	}
	ips, err := RequestedIPs(svc)
	req.RequestedIPs = ips
	return req, err
}

// RequestedIPs parses herald.dev/loadBalancerIPs or spec.loadBalancerIP.
// Setting both is an error, as is an entry that is not an IP address.
func RequestedIPs(svc *corev1.Service) ([]netip.Addr, error) {
	annotation, hasAnnotation := svc.Annotations[v1beta1.AnnotationLoadBalancerIPs]
	spec := strings.TrimSpace(svc.Spec.LoadBalancerIP)
	switch {
	case hasAnnotation && spec != "":
		return nil, &RequestError{Message: fmt.Sprintf("both the %s annotation and spec.loadBalancerIP are set; use only the annotation (spec.loadBalancerIP is deprecated)", v1beta1.AnnotationLoadBalancerIPs)}
	case spec != "":
		return parseIPs(spec, "spec.loadBalancerIP")
	case hasAnnotation:
		return parseIPs(annotation, "annotation "+v1beta1.AnnotationLoadBalancerIPs)
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
