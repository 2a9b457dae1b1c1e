package helm

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// customClass is the load balancer class of TestHelmCustomLBClass's
// installation.
const customClass = "lab.herald.dev/custom"

// classConfig is a pool outside the lab's L2 pool (which the install test
// uses), announced from every node.
const classConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: custom}
spec:
  addresses: [198.51.100.96/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: custom}
spec:
  ipAddressPools: [custom]
`

// TestHelmCustomLBClass installs the chart with lbClass and lbClassOnly
// (--lb-class, --lb-class-only on both workloads): a Service of that
// class gets an address from its pool, one node answers for it and HTTP
// through it reaches a pod; a Service without a class and one of another
// class, both asking for the same pool, are left alone while the first
// is served and for a while after: no address, no condition, no
// annotation, no event of Herald's.
func TestHelmCustomLBClass(t *testing.T) {
	l := lab.Shared(t)
	ctx := context.Background()
	waitNamespaceGone(t, l, deploy.Namespace) // the install test's, deleted at its end
	var images deploy.Images
	h, err := deploy.InstallHelm(ctx, l, &images, "--set", "lbClass="+customClass, "--set", "lbClassOnly=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = h.Kubectl(ctx, "delete", "l2advertisements.herald.dev/custom", "ipaddresspools.herald.dev/custom", "--ignore-not-found", "--timeout=60s")
		_ = h.HelmUninstall(ctx)
		_, _ = h.Kubectl(ctx, "delete", "namespace", deploy.Namespace, "--ignore-not-found", "--wait=false")
	})
	h.LogsOnFailure(t)
	if err := h.Apply(ctx, classConfig); err != nil {
		t.Fatal(err)
	}
	const ns = "helm-class"
	others := map[string]*string{"no-class": nil, "other-class": ptrTo("other.example/lb")}
	for name, class := range others {
		svc := lab.LoadBalancerService(ns, name)
		svc.Annotations = map[string]string{v1beta1.AnnotationAddressPool: "custom"}
		svc.Spec.LoadBalancerClass = class
		if _, err := l.CreateService(ctx, svc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.DeleteService(context.Background(), ns, name) })
	}
	svc := lab.LoadBalancerService(ns, "custom")
	svc.Annotations = map[string]string{v1beta1.AnnotationAddressPool: "custom"}
	svc.Spec.LoadBalancerClass = ptrTo(customClass)
	t.Cleanup(func() { _ = l.DeleteService(context.Background(), ns, "custom") })
	_, ips, err := h.CreateService(ctx, svc, "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	if !netip.MustParsePrefix("198.51.100.96/30").Contains(ips[0]) {
		t.Errorf("Service custom has %s, not an address of pool custom", ips[0])
	}
	t.Logf("Service custom (class %s): %s announced by %s", customClass, ips[0], harness.Owner(t, l, ips[0]))
	reachable(t, l, ips[0])
	// Herald handled the Service of its class; the others, created
	// before it, must stay untouched, then and for 5 s more.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for name := range others {
			if what := touched(t, l, ns, name); what != "" {
				t.Fatalf("Service %s (class %v) %s; Herald runs with --lb-class %s --lb-class-only", name, others[name], what, customClass)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// touched says how Herald touched the Service ns/name, or "".
func touched(t *testing.T, l *lab.Lab, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	s, err := l.Client().CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Status.LoadBalancer.Ingress) > 0 {
		return fmt.Sprintf("has ingress %v", s.Status.LoadBalancer.Ingress)
	}
	if len(s.Status.Conditions) > 0 {
		return fmt.Sprintf("has conditions %v", s.Status.Conditions)
	}
	for k := range s.Annotations {
		if k != v1beta1.AnnotationAddressPool && strings.HasPrefix(k, "herald.dev/") {
			return "has annotation " + k
		}
	}
	events, err := l.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.HasPrefix(e.Source.Component, "herald") || strings.HasPrefix(e.ReportingController, "herald") {
			return fmt.Sprintf("has event %s from %s: %s", e.Reason, e.Source.Component, e.Message)
		}
	}
	return ""
}

// reachable waits until HTTP from the client through vip reaches a pod.
func reachable(t *testing.T, l *lab.Lab, vip netip.Addr) {
	t.Helper()
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+vip.String(), func() bool {
		a, err := l.HTTPGet(context.Background(), lab.Client, vip, 80)
		if err == nil {
			t.Logf("%s:80 answered by %s on %s", vip, a.Pod, a.Node)
		}
		return err == nil
	})
}

// waitNamespaceGone waits until namespace ns no longer exists.
func waitNamespaceGone(t *testing.T, l *lab.Lab, ns string) {
	t.Helper()
	labkit.Eventually(t, 3*time.Minute, "namespace "+ns+" gone", func() bool {
		_, err := l.Client().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func ptrTo[T any](v T) *T { return &v }
