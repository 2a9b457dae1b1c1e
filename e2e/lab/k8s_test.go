package lab_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-lb/herald/e2e/lab"
)

func TestNodeHelpers(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	get := func() *corev1.Node {
		n, err := l.Client().CoreV1().Nodes().Get(ctx, "node3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := l.SetNodeReady(ctx, "node3", false); err != nil {
		t.Fatal(err)
	}
	if ready(get()) {
		t.Error("node3 still Ready")
	}
	if err := l.SetNodeReady(ctx, "node3", true); err != nil {
		t.Fatal(err)
	}
	if !ready(get()) {
		t.Error("node3 not Ready again")
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
	if n := get(); len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != taint.Key || n.Labels[exclude] != "" {
		t.Errorf("taints %v labels %v", n.Spec.Taints, n.Labels)
	}
	if err := l.RemoveNodeTaint(ctx, "node3", taint.Key); err != nil {
		t.Fatal(err)
	}
	if n := get(); len(n.Spec.Taints) != 0 {
		t.Errorf("taints left: %v", n.Spec.Taints)
	}
}

func TestEndpointSlices(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	svc := lab.LoadBalancerService("slices", "etp-local", corev1.IPv4Protocol, corev1.IPv6Protocol)
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if _, err := l.CreateService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	err := l.SetEndpointStates(ctx, svc, lab.ReadyEndpoint("node1"),
		lab.Endpoint{Node: "node2", Serving: true, Terminating: true})
	if err != nil {
		t.Fatal(err)
	}
	sel := discoveryv1.LabelServiceName + "=etp-local," + discoveryv1.LabelManagedBy + "=" + lab.EndpointSliceManager
	list, err := l.Client().DiscoveryV1().EndpointSlices("slices").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var fams []string
	for _, s := range list.Items {
		fams = append(fams, string(s.AddressType))
		if len(s.Endpoints) != 2 || *s.Endpoints[1].NodeName != "node2" || *s.Endpoints[1].Conditions.Ready ||
			!*s.Endpoints[1].Conditions.Terminating || len(s.Ports) != 2 || *s.Ports[0].Port != 8080 {
			t.Errorf("slice %s: %+v ports %+v", s.Name, s.Endpoints, s.Ports)
		}
	}
	slices.Sort(fams)
	if fmt.Sprint(fams) != "[IPv4 IPv6]" {
		t.Errorf("slices for %v", fams)
	}
	if err := l.DeleteService(ctx, "slices", "etp-local"); err != nil {
		t.Fatal(err)
	}
	if list, _ := l.Client().DiscoveryV1().EndpointSlices("slices").List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("%d slices left after DeleteService", len(list.Items))
	}
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
	n1, _ := l.Node("node1")
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
		// routes survived or came back: node3 reaches the router and pod-node1
		if _, err := l.Exec(ctx, "node3", "ping", "-c1", "-W1", n1.Pod.IPv4.String()); err != nil {
			t.Errorf("node3 -> pod-node1 after the link came back: %v", err)
		}
		if _, err := l.Exec(ctx, "node3", "ping", "-c1", "-W1", n3.Pod.IPv6.String()); err != nil {
			t.Errorf("node3 -> its pod over IPv6: %v", err)
		}
	}
}
