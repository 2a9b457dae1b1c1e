package announce

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// ServicesFrom turns Herald's Services with addresses into what announce
// needs; slicesOf returns a Service's EndpointSlices.
func ServicesFrom(svcs []*corev1.Service, ours func(*corev1.Service) bool, slicesOf func(*corev1.Service) []*discoveryv1.EndpointSlice) []Service {
	var out []Service
	for _, svc := range svcs {
		if !ours(svc) {
			continue
		}
		out = append(out, ServiceFrom(svc, slicesOf(svc)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ServiceFrom turns one Service and its EndpointSlices into what announce
// needs.
func ServiceFrom(svc *corev1.Service, slices []*discoveryv1.EndpointSlice) Service {
	return Service{
		Key:       svc.Namespace + "/" + svc.Name,
		Labels:    labels.Set(svc.Labels),
		IPs:       service.IngressIPs(svc),
		Pool:      svc.Annotations[v1beta1.AnnotationAllocatedFromPool],
		ETPLocal:  svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		Endpoints: SummarizeEndpoints(slices),
		// the allocator's key; a Service sharing nothing with it is
		// announced as alone
		SharingKey: svc.Annotations[v1beta1.AnnotationAllowSharedIP],
	}
}
