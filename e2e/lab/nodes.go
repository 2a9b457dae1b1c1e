package lab

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// SetNodeCondition sets (or adds) a condition the kubelet does not own in
// the node's status, e.g. NetworkUnavailable (Ready is the kubelet's: stop
// it with StopKubelet for a real NotReady).
func (cl *Cluster) SetNodeCondition(ctx context.Context, node string, typ corev1.NodeConditionType, status corev1.ConditionStatus) error {
	return cl.updateNode(ctx, node, true, func(n *corev1.Node) {
		now := metav1.Now()
		c := corev1.NodeCondition{Type: typ, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "HeraldLab"}
		i := slices.IndexFunc(n.Status.Conditions, func(x corev1.NodeCondition) bool { return x.Type == typ })
		if i < 0 {
			n.Status.Conditions = append(n.Status.Conditions, c)
			return
		}
		if n.Status.Conditions[i].Status == status {
			c.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
		}
		n.Status.Conditions[i] = c
	})
}

// SetNodeLabel sets a label on the node.
func (cl *Cluster) SetNodeLabel(ctx context.Context, node, key, value string) error {
	return cl.updateNode(ctx, node, false, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	})
}

// RemoveNodeLabel removes a label from the node (no error if absent).
func (cl *Cluster) RemoveNodeLabel(ctx context.Context, node, key string) error {
	return cl.updateNode(ctx, node, false, func(n *corev1.Node) { delete(n.Labels, key) })
}

// AddNodeTaint adds a taint (replacing one with the same key and effect).
func (cl *Cluster) AddNodeTaint(ctx context.Context, node string, taint corev1.Taint) error {
	return cl.updateNode(ctx, node, false, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key && t.Effect == taint.Effect })
		n.Spec.Taints = append(n.Spec.Taints, taint)
	})
}

// RemoveNodeTaint removes every taint with key.
func (cl *Cluster) RemoveNodeTaint(ctx context.Context, node, key string) error {
	return cl.updateNode(ctx, node, false, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	})
}

// updateNode applies change to the node (or its status) and retries on
// conflicts.
func (cl *Cluster) updateNode(ctx context.Context, name string, status bool, change func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cl.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		if status {
			_, err = cl.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		} else {
			_, err = cl.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("updating Node %s: %w", name, err)
	}
	return nil
}

// ensureNamespace creates a namespace when missing.
func (cl *Cluster) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := cl.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}
