package announce

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// TestIgnoreExcludeLabel: with the option, the exclude-from-external-
// load-balancers label no longer excludes a node, and every other reason
// still does.
func TestIgnoreExcludeLabel(t *testing.T) {
	ignore := Eligibility{IgnoreExcludeLabel: true}
	labelled := readyNode("cp", map[string]string{corev1.LabelNodeExcludeBalancers: ""})
	if ok, why := NodeEligibleWith(labelled, Eligibility{}); ok || why != ReasonExcludedByLabel {
		t.Errorf("without the option: eligible=%v reason %q", ok, why)
	}
	if ok, why := NodeEligibleWith(labelled, ignore); !ok || why != "" {
		t.Errorf("with the option: eligible=%v reason %q", ok, why)
	}
	noNetwork := labelled.DeepCopy()
	noNetwork.Status.Conditions = append(noNetwork.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue})
	if ok, why := NodeEligibleWith(noNetwork, ignore); ok || why != ReasonNetworkUnavailable {
		t.Errorf("labelled and NetworkUnavailable with the option: eligible=%v reason %q", ok, why)
	}
	deleting := labelled.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	if ok, why := NodeEligibleWith(deleting, ignore); ok || why != ReasonDeleting {
		t.Errorf("labelled and being deleted with the option: eligible=%v reason %q", ok, why)
	}
	tainted := labelled.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: TaintToBeDeletedByClusterAutoscaler, Effect: corev1.TaintEffectNoSchedule}}
	if ok, why := NodeEligibleWith(tainted, ignore); ok || why != ReasonToBeDeleted {
		t.Errorf("labelled and tainted for removal with the option: eligible=%v reason %q", ok, why)
	}
}

// TestIgnoreExcludeLabelSingleNodeCluster: a single-node cluster whose
// only node carries the label (kubeadm's control plane) gets its address
// announced only with the option.
func TestIgnoreExcludeLabelSingleNodeCluster(t *testing.T) {
	only := []*corev1.Node{readyNode("cp", map[string]string{corev1.LabelNodeExcludeBalancers: ""})}
	st := l2State(t, []*v1beta1.L2Advertisement{l2ad("all", nil)}, only, svc("ns/a", "198.51.100.64"))
	if o := owners(L2(st)); o["198.51.100.64"] != "" {
		t.Fatalf("without the option the excluded node owns the address: %v", o)
	}
	st.Eligibility = Eligibility{IgnoreExcludeLabel: true}
	if o := owners(L2(st)); o["198.51.100.64"] != "cp" {
		t.Fatalf("with the option: owners %v, want cp", o)
	}
}

// TestIgnoreDrain: IgnoreDrain lifts the drain label alone.
func TestIgnoreDrain(t *testing.T) {
	n := &corev1.Node{}
	n.Labels = map[string]string{"herald.dev/drain": "true"}
	if ok, why := NodeEligibleWith(n, Eligibility{}); ok || why != ReasonDraining {
		t.Errorf("drain label: eligible=%v %q", ok, why)
	}
	if ok, why := NodeEligibleWith(n, Eligibility{IgnoreDrain: true}); !ok || why != "" {
		t.Errorf("drain label ignored: eligible=%v %q", ok, why)
	}
	n.Labels[corev1.LabelNodeExcludeBalancers] = "true"
	if ok, why := NodeEligibleWith(n, Eligibility{IgnoreDrain: true}); ok || why != ReasonExcludedByLabel {
		t.Errorf("IgnoreDrain lifted the exclusion label: eligible=%v %q", ok, why)
	}
}
