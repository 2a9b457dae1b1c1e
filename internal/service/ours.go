package service

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// Class says which Services Herald handles.
type Class struct {
	// OwnClassOnly limits Herald to Services whose loadBalancerClass is
	// herald.dev/herald; otherwise Services without a class are Herald's too.
	OwnClassOnly bool
	// Name is Herald's loadBalancerClass; empty means herald.dev/herald.
	// Two installations with different names can share a cluster.
	Name string
}

// ClassName returns the loadBalancerClass Herald answers to.
func (c Class) ClassName() string {
	if c.Name == "" {
		return v1beta1.LoadBalancerClass
	}
	return c.Name
}

// IsOurs reports whether Herald gives the Service its address: a
// LoadBalancer with no class (unless OwnClassOnly) or with Herald's class
// (Name).
// Any other class is never touched.
func (c Class) IsOurs(svc *corev1.Service) bool {
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.LoadBalancerClass == nil {
		return !c.OwnClassOnly
	}
	return *svc.Spec.LoadBalancerClass == c.ClassName()
}
