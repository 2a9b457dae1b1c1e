package lab

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// createNodes creates node1..N with their InternalIPs, pod CIDRs and
// Ready=True. Nothing flips Ready later: there is no kubelet and no
// node-lifecycle controller.
func (l *Lab) createNodes(ctx context.Context) error {
	for _, n := range l.nodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
				"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": runtime.GOARCH,
			}},
			Spec: corev1.NodeSpec{PodCIDR: n.Pod.CIDRv4.String(), PodCIDRs: []string{n.Pod.CIDRv4.String(), n.Pod.CIDRv6.String()}},
		}
		created, err := l.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Node %s: %w", n.Name, err)
		}
		now := metav1.Now()
		created.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.IPv4.String()},
			{Type: corev1.NodeInternalIP, Address: n.IPv6.String()},
			{Type: corev1.NodeHostName, Address: n.Name},
		}
		created.Status.Conditions = []corev1.NodeCondition{readyCondition(corev1.ConditionTrue, now)}
		if _, err := l.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of Node %s: %w", n.Name, err)
		}
		// The TaintNodesByCondition admission plugin gives every new Node
		// node.kubernetes.io/not-ready:NoSchedule; the node lifecycle
		// controller would take it away, and the lab has none.
		if err := l.RemoveNodeTaint(ctx, n.Name, corev1.TaintNodeNotReady); err != nil {
			return err
		}
	}
	return nil
}

func readyCondition(status corev1.ConditionStatus, now metav1.Time) corev1.NodeCondition {
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now,
		Reason: "HeraldLabReady", Message: "set by the Herald lab (no kubelet)"}
	if status != corev1.ConditionTrue {
		c.Reason, c.Message = "HeraldLabNotReady", "set NotReady by the Herald lab"
	}
	return c
}

// SetNodeReady sets the node's Ready condition.
func (l *Lab) SetNodeReady(ctx context.Context, node string, ready bool) error {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return l.SetNodeCondition(ctx, node, corev1.NodeReady, status)
}

// SetNodeCondition sets (or adds) a condition in the node's status, e.g.
// NetworkUnavailable.
func (l *Lab) SetNodeCondition(ctx context.Context, node string, typ corev1.NodeConditionType, status corev1.ConditionStatus) error {
	return l.updateNode(ctx, node, true, func(n *corev1.Node) {
		now := metav1.Now()
		c := corev1.NodeCondition{Type: typ, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "HeraldLab"}
		if typ == corev1.NodeReady {
			c = readyCondition(status, now)
		}
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
func (l *Lab) SetNodeLabel(ctx context.Context, node, key, value string) error {
	return l.updateNode(ctx, node, false, func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	})
}

// RemoveNodeLabel removes a label from the node (no error if absent).
func (l *Lab) RemoveNodeLabel(ctx context.Context, node, key string) error {
	return l.updateNode(ctx, node, false, func(n *corev1.Node) { delete(n.Labels, key) })
}

// AddNodeTaint adds a taint (replacing one with the same key and effect).
func (l *Lab) AddNodeTaint(ctx context.Context, node string, taint corev1.Taint) error {
	return l.updateNode(ctx, node, false, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key && t.Effect == taint.Effect })
		n.Spec.Taints = append(n.Spec.Taints, taint)
	})
}

// RemoveNodeTaint removes every taint with key.
func (l *Lab) RemoveNodeTaint(ctx context.Context, node, key string) error {
	return l.updateNode(ctx, node, false, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	})
}

// updateNode applies change to the node (or its status) and retries on
// conflicts.
func (l *Lab) updateNode(ctx context.Context, name string, status bool, change func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := l.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		if status {
			_, err = l.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		} else {
			_, err = l.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("updating Node %s: %w", name, err)
	}
	return nil
}

// ensureNamespace creates a namespace when missing.
func (l *Lab) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := l.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}
