package speaker

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// slimObject is the speaker's informer transform: every node runs a
// speaker that caches every Service, EndpointSlice and Node of the
// cluster, so it keeps of them only what the speaker reads (slimService,
// slimSlice, slimNode) and drops managedFields from everything else. The
// speaker never writes these objects, so nothing it drops can be written
// back.
func slimObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		return slimService(o), nil
	case *discoveryv1.EndpointSlice:
		return slimSlice(o), nil
	case *corev1.Node:
		return slimNode(o), nil
	}
	return k8s.DropManagedFields(obj)
}

// slimMeta keeps identity, labels and deletion; annotations only with
// Herald's prefix.
func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp, CreationTimestamp: m.CreationTimestamp,
	}
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, v1beta1.GroupName+"/") {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// slimService keeps what announce.ServiceFrom and service.Class.IsOurs
// read: labels, Herald's annotations, type, class, traffic policy and the
// ingress addresses (not the ports, the ClusterIPs, the status conditions
// or kubectl's last-applied-configuration).
func slimService(s *corev1.Service) *corev1.Service {
	out := &corev1.Service{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(s.ObjectMeta)}
	out.Spec.Type = s.Spec.Type
	out.Spec.LoadBalancerClass = s.Spec.LoadBalancerClass
	out.Spec.ExternalTrafficPolicy = s.Spec.ExternalTrafficPolicy
	for _, in := range s.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: in.IP, IPMode: in.IPMode})
	}
	return out
}

// slimSlice keeps what announce.SummarizeEndpoints and the by-Service
// index read: labels, and each endpoint's conditions and node.
func slimSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(s.ObjectMeta), AddressType: s.AddressType}
	if len(s.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, ep := range s.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{Conditions: ep.Conditions, NodeName: ep.NodeName}
		}
	}
	return out
}

// slimNode keeps what eligibility and the member list read: labels,
// taints, the conditions' type and status, and addresses (not the images,
// volumes or node info, which are most of a Node, nor the conditions'
// heartbeat times and messages, so that the kubelet's periodic status
// report leaves the slimmed Node unchanged).
func slimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: slimMeta(n.ObjectMeta)}
	out.Spec.Taints = n.Spec.Taints
	if len(n.Status.Conditions) > 0 {
		out.Status.Conditions = make([]corev1.NodeCondition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			out.Status.Conditions[i] = corev1.NodeCondition{Type: c.Type, Status: c.Status}
		}
	}
	out.Status.Addresses = n.Status.Addresses
	return out
}
