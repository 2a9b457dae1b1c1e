package announce

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TaintToBeDeletedByClusterAutoscaler marks a node the cluster autoscaler
// is about to remove.
const TaintToBeDeletedByClusterAutoscaler = "ToBeDeletedByClusterAutoscaler"

// Reasons a node does not announce, or a Service is not announced.
const (
	ReasonExcludedByLabel    = "ExcludedByLabel"
	ReasonToBeDeleted        = "ToBeDeletedByClusterAutoscaler"
	ReasonDraining           = "Draining"
	ReasonDeleting           = "NodeDeleting"
	ReasonNetworkUnavailable = "NetworkUnavailable"
	ReasonNoAdvertisement    = "NoAdvertisementMatches"
	ReasonNoEligibleNode     = "NoEligibleNode"
	ReasonNoReadyEndpoint    = "NoReadyEndpoint"
	ReasonAnnounced          = "Announced"
	ReasonNoAddress          = "NoAddress"
)

// NodeEligible says whether a node may announce load-balancer addresses at
// all, following the upstream service controller's stable node set
// (k8s.io/cloud-provider, KEP-3458): readiness is not a reason to stop
// announcing, since a node whose kubelet lost the API server may forward
// perfectly well. Whether its speaker is alive is a separate question (see
// State.Live). A node is not eligible when:
//   - it is being deleted (deletionTimestamp set);
//   - it carries the label node.kubernetes.io/exclude-from-external-load-balancers
//     with a value strconv.ParseBool reads as true, or cannot read at all
//     (upstream's rule: "", "yes" exclude; "false", "False", "0", "f" keep
//     the node in);
//   - it carries the ToBeDeletedByClusterAutoscaler taint (any effect);
//   - it carries Herald's drain label herald.dev/drain (see Draining); the
//     exclusion option IgnoreExcludeLabel does not lift it. Cordon
//     (spec.unschedulable) is not a drain and keeps the node eligible;
//   - its NetworkUnavailable condition is True (the network plugin says the
//     node's network is not set up; Herald's own addition to upstream).
//
// The reason is empty when the node is eligible.
func NodeEligible(n *corev1.Node) (bool, string) { return NodeEligibleWith(n, Eligibility{}) }

// Eligibility holds the operator's options of the eligibility decision.
type Eligibility struct {
	// IgnoreExcludeLabel lets nodes labelled
	// node.kubernetes.io/exclude-from-external-load-balancers announce
	// (--ignore-exclude-lb, MetalLB's flag of the same name): for clusters
	// where every node carries the label, such as single-node kubeadm.
	IgnoreExcludeLabel bool
	// IgnoreDrain lets nodes carrying the drain label herald.dev/drain
	// announce: a draining node's speaker uses it for BGP alone while it
	// sends its paths with GRACEFUL_SHUTDOWN, before it withdraws them.
	IgnoreDrain bool
}

// NodeEligibleWith is NodeEligible with the operator's options.
func NodeEligibleWith(n *corev1.Node, e Eligibility) (bool, string) {
	if n.DeletionTimestamp != nil {
		return false, ReasonDeleting
	}
	if !e.IgnoreExcludeLabel && ExcludedByLabel(n.Labels) {
		return false, ReasonExcludedByLabel
	}
	if !e.IgnoreDrain && Draining(n.Labels) {
		return false, ReasonDraining
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintToBeDeletedByClusterAutoscaler {
			return false, ReasonToBeDeleted
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue {
			return false, ReasonNetworkUnavailable
		}
	}
	return true, ""
}

// Draining says whether a node's labels ask Herald to drain it: the label
// herald.dev/drain is present and its value does not read as false
// (strconv.ParseBool), the rule of the exclusion label.
func Draining(l map[string]string) bool {
	v, ok := l[v1beta1.LabelDrain]
	if !ok {
		return false
	}
	drain, err := strconv.ParseBool(v)
	return err != nil || drain
}

// ExcludedByLabel applies upstream's nodeIncludedPredicate to a node's
// labels: the exclusion label, when present, excludes unless
// strconv.ParseBool reads its value as false; a value it cannot parse
// (including "") excludes.
func ExcludedByLabel(l map[string]string) bool {
	v, ok := l[corev1.LabelNodeExcludeBalancers]
	if !ok {
		return false
	}
	exclude, err := strconv.ParseBool(v)
	return err != nil || exclude
}
