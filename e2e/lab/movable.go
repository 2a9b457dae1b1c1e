package lab

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MovableBackend is a Deployment of one backend pod (the podserver, on
// ports 8080 and 8443, Ready through its readiness probe) labelled
// app=name and pinned to no node: the scheduler places it, and places it
// again elsewhere when it is evicted (a drain) or deleted from a cordoned
// node. Select it with app=name.
func MovableBackend(namespace, name string) *appsv1.Deployment {
	one, grace := int32(1), int64(2)
	labels := map[string]string{labelApp: name}
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// a node has a /29 of pod addresses: no surge
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "podserver", Image: BackendImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"-name=$(POD_NAME)", "-node=$(NODE_NAME)", "-ports=8080,8443"},
						Env:  []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
						Ports: []corev1.ContainerPort{
							{ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
							{ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
						},
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

// ReadyPodNode returns the node of the one Ready pod labelled app=name in
// namespace that is not being deleted; an error when there is none or
// more than one.
func (cl *Cluster) ReadyPodNode(ctx context.Context, namespace, name string) (string, error) {
	pods, err := cl.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labelApp + "=" + name})
	if err != nil {
		return "", err
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && PodReady(&p) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	if len(nodes) != 1 {
		return "", fmt.Errorf("pods app=%s in %s: Ready on %v, want one", name, namespace, nodes)
	}
	return nodes[0], nil
}
