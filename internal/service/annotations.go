package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// MetalLB's Service annotations, current and legacy, that Herald reads in
// place of its own when the Herald annotation is absent.
const (
	MetalLBLoadBalancerIPs       = "metallb.io/loadBalancerIPs"
	MetalLBAddressPool           = "metallb.io/address-pool"
	MetalLBAllowSharedIP         = "metallb.io/allow-shared-ip"
	LegacyMetalLBLoadBalancerIPs = "metallb.universe.tf/loadBalancerIPs"
	LegacyMetalLBAddressPool     = "metallb.universe.tf/address-pool"
	LegacyMetalLBAllowSharedIP   = "metallb.universe.tf/allow-shared-ip"
	// MetalLBAllocatedFromPool and its legacy form are written by MetalLB's
	// controller: the pool a Service's addresses came from.
	MetalLBAllocatedFromPool       = "metallb.io/ip-allocated-from-pool"
	LegacyMetalLBAllocatedFromPool = "metallb.universe.tf/ip-allocated-from-pool"
)

// heraldRequestAnnotations are the annotations a Service's request is
// read from.
func heraldRequestAnnotations() []string {
	return []string{v1beta1.AnnotationAddressPool, v1beta1.AnnotationAllowSharedIP, v1beta1.AnnotationLoadBalancerIPs}
}

// metalLBNames are the MetalLB names read in place of a Herald request
// annotation, current name first.
func metalLBNames(herald string) []string {
	switch herald {
	case v1beta1.AnnotationLoadBalancerIPs:
		return []string{MetalLBLoadBalancerIPs, LegacyMetalLBLoadBalancerIPs}
	case v1beta1.AnnotationAddressPool:
		return []string{MetalLBAddressPool, LegacyMetalLBAddressPool}
	case v1beta1.AnnotationAllowSharedIP:
		return []string{MetalLBAllowSharedIP, LegacyMetalLBAllowSharedIP}
	}
	return nil
}

// Annotations says which annotation names a Service's request is read
// from. The zero value reads Herald's and, where Herald's is absent,
// MetalLB's.
type Annotations struct {
	// IgnoreMetalLB reads herald.dev/ annotations only.
	IgnoreMetalLB bool
}

// Translation is a MetalLB annotation read as a Herald one.
type Translation struct {
	MetalLB, Herald, Value string
}

// annotation is the effective value of one Herald request annotation.
type annotation struct {
	value   string
	present bool
	from    string // the annotation it was read from
}

// lookup returns the effective value of a Herald request annotation. Two
// names carrying different values (Herald's and MetalLB's, or MetalLB's
// two forms) are an error: Herald never guesses which one is meant.
func (a Annotations) lookup(svc *corev1.Service, herald string) (annotation, error) {
	names := []string{herald}
	if !a.IgnoreMetalLB {
		names = append(names, metalLBNames(herald)...)
	}
	var found annotation
	for _, name := range names {
		v, ok := svc.Annotations[name]
		if !ok {
			continue
		}
		if !found.present {
			found = annotation{value: v, present: true, from: name}
			continue
		}
		if normalize(herald, v) != normalize(herald, found.value) {
			return annotation{}, &RequestError{Message: fmt.Sprintf(
				"annotations %s (%q) and %s (%q) disagree; keep only %s", found.from, found.value, name, v, herald)}
		}
	}
	return found, nil
}

// normalize compares annotation values the way they are parsed: spaces
// around entries do not matter.
func normalize(name, v string) string {
	if name != v1beta1.AnnotationLoadBalancerIPs {
		return strings.TrimSpace(v)
	}
	var parts []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ",")
}

// MetalLBInUse lists the MetalLB annotations the Service's request is read
// from (those whose Herald name is absent), in the order of the Herald names; nil when
// IgnoreMetalLB is set.
func (a Annotations) MetalLBInUse(svc *corev1.Service) []Translation {
	if a.IgnoreMetalLB {
		return nil
	}
	var out []Translation
	for _, herald := range heraldRequestAnnotations() {
		got, err := a.lookup(svc, herald)
		if err != nil || !got.present || got.from == herald {
			continue
		}
		out = append(out, Translation{MetalLB: got.from, Herald: herald, Value: got.value})
	}
	return out
}

// MetalLBControllerManager is the field manager of MetalLB's controller in
// a Service's managed fields.
const MetalLBControllerManager = "metallb-controller"

// AssignedByMetalLB reports whether the addresses in the Service's status
// were written by MetalLB and not (yet) by Herald: MetalLB's
// ip-allocated-from-pool annotation or its controller's field manager on
// the status, and no herald.dev/ip-allocated-from-pool. pool is MetalLB's
// pool name when its annotation says it.
func AssignedByMetalLB(svc *corev1.Service) (pool string, ok bool) {
	if _, herald := svc.Annotations[v1beta1.AnnotationAllocatedFromPool]; herald || len(IngressIPs(svc)) == 0 {
		return "", false
	}
	for _, name := range []string{MetalLBAllocatedFromPool, LegacyMetalLBAllocatedFromPool} {
		if p, found := svc.Annotations[name]; found {
			return p, true
		}
	}
	for _, mf := range svc.ManagedFields {
		if mf.Manager == MetalLBControllerManager && mf.Subresource == "status" {
			return "", true
		}
	}
	return "", false
}
