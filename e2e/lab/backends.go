package lab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/herald-lb/herald/test/labkit"
)

// Backends are real pods: in every namespace that has a Service with
// endpoints, one Deployment per node (backend-<node>, pinned to the node
// with a nodeSelector) runs the podserver image, Ready through a real
// readiness probe. The endpointslice controller writes the EndpointSlices.
//
// A Service selects a set of nodes' backends with one label: every
// backend pod carries lab.herald.dev/on-<i>-<j>... = "yes" for each set of
// node indexes that contains its own node, so SetEndpoints only changes
// the Service's selector.
const (
	BackendApp   = "lab-backend"
	labelApp     = "app"
	labelNode    = "lab.herald.dev/node"
	labelSetStem = "lab.herald.dev/on-"
)

// BackendName is the Deployment (and pod name prefix) of node's backend.
func BackendName(node string) string { return "backend-" + node }

// setLabel is the label selecting exactly the backends on nodes (by index).
func setLabel(indexes []int) string {
	slices.Sort(indexes)
	parts := make([]string, len(indexes))
	for i, x := range indexes {
		parts[i] = strconv.Itoa(x)
	}
	return labelSetStem + strings.Join(parts, "-")
}

// backendLabels are the labels of node i's backend pods among n nodes.
func backendLabels(i, n int) map[string]string {
	labels := map[string]string{labelApp: BackendApp, labelNode: NodeName(i)}
	for mask := 1; mask < 1<<n; mask++ {
		if mask&(1<<(i-1)) == 0 {
			continue
		}
		var set []int
		for j := 1; j <= n; j++ {
			if mask&(1<<(j-1)) != 0 {
				set = append(set, j)
			}
		}
		labels[setLabel(set)] = "yes"
	}
	return labels
}

// EnsureBackends creates the backend Deployments in namespace (and the
// namespace) when missing and waits until every backend pod is Ready.
func (l *Lab) EnsureBackends(ctx context.Context, namespace string) error {
	if err := l.ensureNamespace(ctx, namespace); err != nil {
		return err
	}
	for _, n := range l.nodes {
		d := l.backendDeployment(namespace, n)
		_, err := l.kube.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("backend Deployment %s/%s: %w", namespace, d.Name, err)
		}
	}
	return l.WaitBackendsReady(ctx, namespace, 2*time.Minute)
}

// WaitBackendsReady waits until each node's backend in namespace has one
// Ready pod.
func (l *Lab) WaitBackendsReady(ctx context.Context, namespace string, timeout time.Duration) error {
	var last string
	err := labkit.Poll(ctx, timeout, "every node's backend Ready", func() (bool, error) {
		ready := 0
		last = ""
		for _, n := range l.nodes {
			d, err := l.kube.AppsV1().Deployments(namespace).Get(ctx, BackendName(n.Name), metav1.GetOptions{})
			if err != nil {
				last += err.Error() + "; "
				continue
			}
			if d.Status.ReadyReplicas >= 1 && d.Status.ObservedGeneration == d.Generation {
				ready++
			} else {
				last += fmt.Sprintf("%s: %d ready; ", d.Name, d.Status.ReadyReplicas)
			}
		}
		return ready == len(l.nodes), nil
	})
	if err != nil {
		return fmt.Errorf("backends in %s not Ready (%s): %w", namespace, last, err)
	}
	return nil
}

func (l *Lab) backendDeployment(namespace string, n Node) *appsv1.Deployment {
	one := int32(1)
	grace := int64(2)
	labels := backendLabels(n.Index, len(l.nodes))
	var ports []corev1.ContainerPort
	for _, p := range l.podPorts() {
		port, _ := strconv.Atoi(p)
		ports = append(ports, corev1.ContainerPort{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP})
	}
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: BackendName(n.Name), Labels: map[string]string{labelApp: BackendApp}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelApp: BackendApp, labelNode: n.Name}},
			// a node has a /29 of pod addresses: no surge
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{corev1.LabelHostname: n.Name},
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "podserver", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
						Args:  []string{"-name=$(POD_NAME)", "-node=$(NODE_NAME)", "-ports=" + strings.Join(l.podPorts(), ",")},
						Env:   []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
						Ports: ports,
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1, FailureThreshold: 2,
						},
					}},
				},
			},
		},
	}
}

// SetEndpoints makes the backends on nodes (in the Service's namespace)
// the Service's endpoints, by its selector, and waits until the
// endpointslice controller lists exactly them, ready, for every IP family
// of the Service. No node: no endpoint.
func (l *Lab) SetEndpoints(ctx context.Context, svc *corev1.Service, nodes ...string) error {
	if len(nodes) > 0 {
		if err := l.EnsureBackends(ctx, svc.Namespace); err != nil {
			return err
		}
	}
	var indexes []int
	for _, name := range nodes {
		n, err := l.Node(name)
		if err != nil {
			return fmt.Errorf("endpoints of %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		indexes = append(indexes, n.Index)
	}
	selector := map[string]string{labelApp: BackendApp, labelSetStem + "none": "yes"}
	if len(indexes) > 0 {
		selector = map[string]string{labelApp: BackendApp, setLabel(indexes): "yes"}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := l.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Selector = selector
		_, err = l.kube.CoreV1().Services(svc.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("selector of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return l.WaitEndpoints(ctx, svc.Namespace, svc.Name, nodes, time.Minute)
}

// WaitEndpoints waits until the Service's EndpointSlices hold exactly one
// ready endpoint on each of nodes per IP family of the Service.
func (l *Lab) WaitEndpoints(ctx context.Context, namespace, name string, nodes []string, timeout time.Duration) error {
	want := slices.Clone(nodes)
	slices.Sort(want)
	var got map[discoveryv1.AddressType][]string
	err := labkit.Poll(ctx, timeout, "the Service's ready endpoints on the nodes", func() (bool, error) {
		svc, err := l.kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got, err = l.readyEndpointNodes(ctx, namespace, name)
		if err != nil {
			return false, nil
		}
		for _, fam := range svc.Spec.IPFamilies {
			if !slices.Equal(got[discoveryv1.AddressType(fam)], want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("endpoints of %s/%s: want ready on %v, have %v: %w", namespace, name, want, got, err)
	}
	return nil
}

// readyEndpointNodes maps address type to the sorted nodes of the
// Service's ready endpoints.
func (l *Lab) readyEndpointNodes(ctx context.Context, namespace, name string) (map[discoveryv1.AddressType][]string, error) {
	slicesList, err := l.kube.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, err
	}
	out := map[discoveryv1.AddressType][]string{}
	for _, s := range slicesList.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready && e.NodeName != nil {
				out[s.AddressType] = append(out[s.AddressType], *e.NodeName)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out, nil
}

// BackendPod is a node's Ready backend pod in namespace.
type BackendPod struct {
	Name       string
	IPv4, IPv6 netip.Addr
}

// Backend returns node's Ready backend pod in namespace.
func (l *Lab) Backend(ctx context.Context, namespace, node string) (BackendPod, error) {
	pods, err := l.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + BackendApp + "," + labelNode + "=" + node})
	if err != nil {
		return BackendPod{}, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !PodReady(&p) {
			continue
		}
		b := BackendPod{Name: p.Name}
		for _, ip := range p.Status.PodIPs {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				if a.Is4() {
					b.IPv4 = a
				} else {
					b.IPv6 = a
				}
			}
		}
		return b, nil
	}
	return BackendPod{}, fmt.Errorf("no Ready backend pod on %s in %s", node, namespace)
}

// PodReady says whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
