package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// The nodes are real: registered by their kubelets with containerd as the
// runtime, and a stopped kubelet makes the node lifecycle controller mark
// the node NotReady.
func TestNodesAreReal(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, 3*time.Minute)
	nodes, err := l.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(l.Nodes()) {
		t.Fatalf("%d Node objects, want %d", len(nodes.Items), len(l.Nodes()))
	}
	for _, n := range nodes.Items {
		info := n.Status.NodeInfo
		if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || !strings.HasPrefix(info.KubeletVersion, "v1.") {
			t.Errorf("%s: runtime %q kubelet %q", n.Name, info.ContainerRuntimeVersion, info.KubeletVersion)
		}
		if !lab.NodeIsReady(&n) {
			t.Errorf("%s is not Ready", n.Name)
		}
	}
	get := func() *corev1.Node {
		n, err := l.Client().CoreV1().Nodes().Get(ctx, "node3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	stopped := time.Now()
	if err := l.StopKubelet("node3"); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, lab.NodeMonitorGracePeriod+time.Minute, "node3 NotReady after its kubelet stopped", func() bool { return !lab.NodeIsReady(get()) })
	t.Logf("node3 NotReady %v after its kubelet stopped (grace period %v)", time.Since(stopped).Round(100*time.Millisecond), lab.NodeMonitorGracePeriod)
	if err := l.StartKubelet(ctx, "node3"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitNodesReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	const exclude = "node.kubernetes.io/exclude-from-external-load-balancers"
	if err := l.SetNodeLabel(ctx, "node3", exclude, "true"); err != nil {
		t.Fatal(err)
	}
	if get().Labels[exclude] != "true" {
		t.Error("label not set")
	}
	if err := l.RemoveNodeLabel(ctx, "node3", exclude); err != nil {
		t.Fatal(err)
	}
	taint := corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: "1", Effect: corev1.TaintEffectNoSchedule}
	if err := l.AddNodeTaint(ctx, "node3", taint); err != nil {
		t.Fatal(err)
	}
	if n := get(); !slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == taint.Key }) || n.Labels[exclude] != "" {
		t.Errorf("taints %v labels %v", n.Spec.Taints, n.Labels)
	}
	if err := l.RemoveNodeTaint(ctx, "node3", taint.Key); err != nil {
		t.Fatal(err)
	}
	if n := get(); slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == taint.Key }) {
		t.Errorf("taint left: %v", n.Spec.Taints)
	}
}

// Backends are real pods; the endpointslice controller writes the
// Service's slices, and the garbage collector removes them with it.
func TestEndpointSlices(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, 3*time.Minute)
	svc := lab.LoadBalancerService("slices", "etp-local", corev1.IPv4Protocol, corev1.IPv6Protocol)
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if _, err := l.CreateService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := l.SetEndpoints(ctx, svc, "node1", "node2"); err != nil {
		t.Fatal(err)
	}
	list, err := l.Client().DiscoveryV1().EndpointSlices("slices").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=etp-local"})
	if err != nil {
		t.Fatal(err)
	}
	var fams []string
	for _, s := range list.Items {
		fams = append(fams, string(s.AddressType))
		if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || len(s.Endpoints) != 2 || len(s.Ports) != 2 {
			t.Errorf("slice %s (managed by %s): %+v ports %+v", s.Name, s.Labels[discoveryv1.LabelManagedBy], s.Endpoints, s.Ports)
		}
	}
	slices.Sort(fams)
	if fmt.Sprint(fams) != "[IPv4 IPv6]" {
		t.Errorf("slices for %v", fams)
	}
	checkPodLogs(ctx, t, l, "slices")
	if err := l.SetEndpoints(ctx, svc, "node3"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteService(ctx, "slices", "etp-local"); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, time.Minute, "the Service's EndpointSlices gone", func() bool {
		list, err := l.Client().DiscoveryV1().EndpointSlices("slices").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=etp-local"})
		return err == nil && len(list.Items) == 0
	})
}

// A ServiceAccount kubeconfig authenticates as the ServiceAccount, from
// inside a node namespace too.
func TestServiceAccountKubeconfig(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	path, err := l.ServiceAccountKubeconfig(ctx, "herald-system", "speaker")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo.Username; u != "system:serviceaccount:herald-system:speaker" {
		t.Errorf("authenticated as %q", u)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a ServiceAccount without RBAC could list Secrets")
	}
}

func TestLinks(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	n3, _ := l.Node("node3")
	if err := l.EnsureBackends(ctx, "links"); err != nil {
		t.Fatal(err)
	}
	pod1, err := l.Backend(ctx, "links", "node1")
	if err != nil {
		t.Fatal(err)
	}
	pod3, err := l.Backend(ctx, "links", "node3")
	if err != nil {
		t.Fatal(err)
	}
	reach := func(up bool) {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("node3 reachable = %v", up), func() error {
			err := l.Ping(ctx, lab.Client, n3.IPv4)
			if (err == nil) != up {
				return fmt.Errorf("ping: %v", err)
			}
			return nil
		})
	}
	for _, set := range []func(*testing.T) error{
		func(t *testing.T) error { return l.SetLink(ctx, "node3", false) },
		func(t *testing.T) error { return l.SetNodeLink(ctx, "node3", false) },
	} {
		if err := set(t); err != nil {
			t.Fatal(err)
		}
		reach(false)
		if err := l.SetLink(ctx, "node3", true); err != nil {
			t.Fatal(err)
		}
		if err := l.SetNodeLink(ctx, "node3", true); err != nil {
			t.Fatal(err)
		}
		reach(true)
		// routes survived or came back: node3 reaches node1's pod
		if _, err := l.Exec(ctx, "node3", "ping", "-c1", "-W1", pod1.IPv4.String()); err != nil {
			t.Errorf("node3 -> node1's pod after the link came back: %v", err)
		}
		if _, err := l.Exec(ctx, "node3", "ping", "-c1", "-W1", pod3.IPv6.String()); err != nil {
			t.Errorf("node3 -> its pod over IPv6: %v", err)
		}
	}
}

// checkPodLogs: kubectl logs reaches a node's kubelet through the API
// server (its kubelet client certificate), as an operator reading a
// backend's log does.
func checkPodLogs(ctx context.Context, t *testing.T, l *lab.Lab, namespace string) {
	t.Helper()
	pods, err := l.Client().CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods in %s: %d, %v", namespace, len(pods.Items), err)
	}
	p := pods.Items[0]
	out, err := l.Kubectl(ctx, "-n", namespace, "logs", p.Name)
	if err != nil || !strings.Contains(out, "serving") {
		t.Errorf("kubectl logs %s (on %s): %v\n%s", p.Name, p.Spec.NodeName, err, out)
	}
}
