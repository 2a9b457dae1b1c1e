package l2

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// localOn creates an externalTrafficPolicy Local Service name whose one
// backend is a movable pod (lab.MovableBackend) started on node: the
// other nodes are cordoned until it is Ready there. It returns the
// Service's address.
func localOn(t *testing.T, l *lab.Lab, name, node string) netip.Addr {
	t.Helper()
	ctx := context.Background()
	for _, n := range l.Nodes() {
		if n.Name == node {
			continue
		}
		if err := l.Cordon(ctx, n.Name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Uncordon(context.Background(), n.Name) })
	}
	deployments := l.Client().AppsV1().Deployments(testNS)
	if _, err := deployments.Create(ctx, lab.MovableBackend(testNS, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deployments.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var on string
	labkit.Eventually(t, time.Minute, name+"'s pod Ready on "+node, func() bool {
		on, _ = l.ReadyPodNode(ctx, testNS, name)
		return on == node
	})
	for _, n := range l.Nodes() {
		if n.Name == node {
			continue
		}
		if err := l.Uncordon(ctx, n.Name); err != nil {
			t.Fatal(err)
		}
	}
	_, ips := suite.Service(t, name, poolL2, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": name}
	})
	return ips[0]
}

// servedLocally waits until node alone answers for vip, and an HTTP request
// from the client is answered by the pod on node, which sees the client's
// own address (ETP Local: no masquerade).
func servedLocally(t *testing.T, l *lab.Lab, vip netip.Addr, node string) {
	t.Helper()
	labkit.Eventually(t, time.Minute, node+" alone answering for "+vip.String(), func() bool {
		a := harness.Probe(t, l, vip)
		return len(a) == 1 && a[0].Node == node
	})
	var a lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+vip.String(), func() bool {
		var err error
		a, err = l.HTTPGet(context.Background(), lab.Client, vip, 80)
		return err == nil
	})
	if a.Node != node {
		t.Errorf("%s:80 answered by %s on %s, want the pod on %s", vip, a.Pod, a.Node, node)
	}
	if a.ClientAddr.Addr().String() != lab.ClientIPv4 {
		t.Errorf("%s:80: the pod %s saw the client as %s, want %s (ETP Local keeps the source)", vip, a.Pod, a.Client, lab.ClientIPv4)
	}
	t.Logf("%s:80 answered by %s on %s, which saw the client as %s", vip, a.Pod, a.Node, a.Client)
}
