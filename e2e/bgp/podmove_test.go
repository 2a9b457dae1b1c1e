package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestLocalNextHopFollowsRescheduledPod: an externalTrafficPolicy Local
// Service whose only pod (a Deployment, not pinned to a node) is
// rescheduled to another node, as an operator does it (cordon its node,
// delete the pod): the router's next hops follow the pod, with a path
// from the node holding the Ready endpoint alone, and the pod sees the
// external client's own address before and after the move.
func TestLocalNextHopFollowsRescheduledPod(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	const app = "mover"
	createMover(t, l, app)
	_, ips := suite.Service(t, app, poolMain, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": app}
	})
	prefix := host(ips[0])
	pod := readyPod(t, l, app, "")
	from := pod.Spec.NodeName
	waitLocalNextHop(t, l, prefix, ips[0], from)

	if err := l.Cordon(ctx, from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Uncordon(context.Background(), from); err != nil {
			t.Errorf("uncordon %s: %v", from, err)
		}
	})
	start := time.Now()
	if err := l.Client().CoreV1().Pods(testNS).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	moved := readyPod(t, l, app, pod.Name)
	to := moved.Spec.NodeName
	if to == from {
		t.Fatalf("the new pod %s runs on the cordoned %s", moved.Name, from)
	}
	t.Logf("pod %s on %s replaced by %s on %s, Ready %v after the delete", pod.Name, from, moved.Name, to,
		time.Since(start).Round(time.Millisecond))
	waitLocalNextHop(t, l, prefix, ips[0], to)
	t.Logf("next hop moved from %s to %s %v after the delete", from, to, time.Since(start).Round(time.Millisecond))
}

// createMover creates a one-pod Deployment of the lab's backend image,
// labelled app=name, that the scheduler may put on any node, and deletes
// it at the end of the test.
func createMover(t testing.TB, l *lab.Lab, name string) {
	t.Helper()
	one, grace := int32(1), int64(2)
	labels := map[string]string{"app": name}
	env := func(n, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "podserver", Image: lab.BackendImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"-name=$(POD_NAME)", "-node=$(NODE_NAME)", "-ports=8080,8443"},
						Env:  []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1, FailureThreshold: 2,
						},
					}},
				},
			},
		},
	}
	deps := l.Client().AppsV1().Deployments(testNS)
	t.Cleanup(func() { _ = deps.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := deps.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readyPod waits for the one Ready, not terminating pod labelled
// app=name other than not, and returns it.
func readyPod(t testing.TB, l *lab.Lab, name, not string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	var seen []string
	labkit.EventuallyWhy(t, 2*time.Minute, "a Ready pod of "+name, func() (bool, string) {
		pods, err := l.Client().CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err.Error()
		}
		seen = seen[:0]
		for _, p := range pods.Items {
			seen = append(seen, fmt.Sprintf("%s on %q (%s)", p.Name, p.Spec.NodeName, p.Status.Phase))
			if p.Name != not && p.DeletionTimestamp == nil && lab.PodReady(&p) {
				pod = p
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
	return pod
}

// waitLocalNextHop waits until node is the router's only next hop for
// prefix, with a path from node alone, and checks that an external
// client's request reaches the pod on node with its own source address.
func waitLocalNextHop(t testing.TB, l *lab.Lab, prefix netip.Prefix, vip netip.Addr, node string) {
	t.Helper()
	waitFIB(t, l, prefix, node)
	want := nodeAddrs(l, false, node)
	labkit.EventuallyWhy(t, 30*time.Second, "a path from "+node+" only", func() (bool, string) {
		got := pathPeers(route(t, l, prefix))
		return slices.Equal(got, want), fmt.Sprintf("paths from %v", got)
	})
	var answer lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an answer from the pod on "+node, func() bool {
		var err error
		answer, err = l.HTTPGet(context.Background(), lab.External, vip, 80)
		return err == nil && answer.Node == node
	})
	if answer.ClientAddr.Addr().String() != lab.ExternalIPv4 {
		t.Errorf("the pod on %s saw the client as %s, want %s (Local keeps the source)", node, answer.Client, lab.ExternalIPv4)
	}
}
