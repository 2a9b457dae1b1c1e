package lab

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/test/labkit"
)

// CPULoad is a DaemonSet of busy pods: every node's CPU saturated by its
// own workload, the way a real node is (the pods compete with the
// node's speaker in the node's kubepods cgroups, by their requests).
type CPULoad struct {
	cl        *Cluster
	namespace string
	name      string
}

// CPULoadName is the DaemonSet StartCPULoad creates.
const CPULoadName = "cpu-load"

// StartCPULoad runs, in namespace, a host-network pod on each of nodes
// (none: every node) that keeps threads threads busy (the backend image's
// -burn), with a CPU request of request (Burstable; "" for BestEffort) and
// no limit, and waits until one runs on each.
func (l *Lab) StartCPULoad(ctx context.Context, namespace string, threads int, request string, nodes ...string) (*CPULoad, error) {
	if threads < 1 {
		return nil, fmt.Errorf("CPU load: %d threads, want at least one", threads)
	}
	var res corev1.ResourceRequirements
	if request != "" {
		q, err := resource.ParseQuantity(request)
		if err != nil {
			return nil, fmt.Errorf("CPU load: request %q: %w", request, err)
		}
		res.Requests = corev1.ResourceList{corev1.ResourceCPU: q}
	}
	if len(nodes) == 0 {
		for _, n := range l.nodes {
			nodes = append(nodes, n.Name)
		}
	}
	grace := int64(1)
	labels := map[string]string{labelApp: CPULoadName}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CPULoadName, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// no pod address: a node has few
					HostNetwork:                   true,
					TerminationGracePeriodSeconds: &grace,
					Affinity:                      affinity,
					Containers: []corev1.Container{{
						Name: "burn", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
						Args:      []string{"-burn=" + strconv.Itoa(threads)},
						Resources: res,
					}},
				},
			},
		},
	}
	if _, err := l.kube.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("CPU load: %w", err)
	}
	c := &CPULoad{cl: &l.Cluster, namespace: namespace, name: CPULoadName}
	var last string
	err := labkit.Poll(ctx, 60*time.Second, "the CPU load running on every node", func() (bool, error) {
		pods, err := l.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + CPULoadName})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		running := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running[p.Spec.NodeName] = true
			}
		}
		last = fmt.Sprintf("running on %d of %d nodes", len(running), len(nodes))
		return len(running) == len(nodes), nil
	})
	if err != nil {
		_ = c.Stop(context.Background())
		return nil, fmt.Errorf("CPU load not running everywhere (%s): %w", last, err)
	}
	return c, nil
}

// Stop deletes the DaemonSet and waits until its pods are gone.
func (c *CPULoad) Stop(ctx context.Context) error {
	fg := metav1.DeletePropagationForeground
	err := c.cl.kube.AppsV1().DaemonSets(c.namespace).Delete(ctx, c.name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("CPU load: %w", err)
	}
	return labkit.Poll(ctx, 60*time.Second, "the CPU load's Pods gone", func() (bool, error) {
		pods, err := c.cl.kube.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + CPULoadName})
		return err == nil && len(pods.Items) == 0, nil
	})
}
