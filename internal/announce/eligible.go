package announce

import (
	corev1 "k8s.io/api/core/v1"
)

// TaintToBeDeletedByClusterAutoscaler marks a node the cluster autoscaler
// is about to remove.
const TaintToBeDeletedByClusterAutoscaler = "ToBeDeletedByClusterAutoscaler"

// Reasons a node does not announce, or a Service is not announced.
const (
	ReasonExcludedByLabel    = "ExcludedByLabel"
	ReasonToBeDeleted        = "ToBeDeletedByClusterAutoscaler"
	ReasonNotReady           = "NotReady"
	ReasonNetworkUnavailable = "NetworkUnavailable"
	ReasonNoAdvertisement    = "NoAdvertisementMatches"
	ReasonNoEligibleNode     = "NoEligibleNode"
	ReasonNoReadyEndpoint    = "NoReadyEndpoint"
	ReasonAnnounced          = "Announced"
	ReasonNoAddress          = "NoAddress"
)

// NodeEligible says whether a node may announce load-balancer addresses at
// all, the way Kubernetes decides which nodes back a load balancer:
//   - the label node.kubernetes.io/exclude-from-external-load-balancers,
//     present with any value but "false", excludes it;
//   - so does the ToBeDeletedByClusterAutoscaler taint (any effect);
//   - and a Ready condition that is not True, or NetworkUnavailable True.
//
// The reason is empty when the node is eligible.
func NodeEligible(n *corev1.Node) (bool, string) {
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok && v != "false" {
		return false, ReasonExcludedByLabel
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintToBeDeletedByClusterAutoscaler {
			return false, ReasonToBeDeleted
		}
	}
	ready := false
	for _, c := range n.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			ready = c.Status == corev1.ConditionTrue
		case corev1.NodeNetworkUnavailable:
			if c.Status == corev1.ConditionTrue {
				return false, ReasonNetworkUnavailable
			}
		}
	}
	if !ready {
		return false, ReasonNotReady
	}
	return true, ""
}
