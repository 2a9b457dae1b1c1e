package l2

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestSharedLocalDifferentPods: two externalTrafficPolicy Local Services
// (port 80 and port 443) of different Deployments share one address;
// their pods are placed so that exactly one node has both, and that node
// alone answers for the address; HTTP on both ports reaches its pods,
// which see the client's own address. Moving a pod moves the owner to
// the node that then has both.
func TestSharedLocalDifferentPods(t *testing.T) {
	l, _ := suite.Herald(t)
	if len(l.Nodes()) < 3 {
		t.Skip("needs three nodes")
	}
	// the Services first: creating one creates the namespace
	web := sharedLocalService(t, l, "shl-web", 80, 8080)
	tls := sharedLocalService(t, l, "shl-tls", 443, 8443)
	pin := func(app, node string) (remove func()) { return suite.PinnedBackend(t, l, app, node) }
	pin("shl-web", "node1")
	pin("shl-web", "node2")
	tlsOn2 := pin("shl-tls", "node2")
	pin("shl-tls", "node3")
	waitEndpoints(t, l, "shl-web", "node1", "node2")
	waitEndpoints(t, l, "shl-tls", "node2", "node3")
	if web != tls {
		t.Fatalf("shl-web holds %s and shl-tls %s: Local Services with different pods must share", web, tls)
	}
	vip := web
	sharedServed(t, l, vip, "node2")
	for _, name := range []string{"shl-web", "shl-tls"} {
		waitCondition(t, l, name, v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	}

	// the TLS pod moves from node2 to node1: node1 has both now
	pin("shl-tls", "node1")
	tlsOn2()
	waitEndpoints(t, l, "shl-tls", "node1", "node3")
	sharedServed(t, l, vip, "node1")
}

// TestSharedLocalNoNodeHasBoth: when no node has a pod of both Local
// Services sharing the address, it stays announced by a node with some
// of them (the default fallback) and herald.dev/Announced says
// SharedLocalIncomplete, naming which Service lacks pods on which nodes.
func TestSharedLocalNoNodeHasBoth(t *testing.T) {
	l, _ := suite.Herald(t)
	if len(l.Nodes()) < 3 {
		t.Skip("needs three nodes")
	}
	vip := sharedLocalService(t, l, "shn-web", 80, 8080)
	if got := sharedLocalService(t, l, "shn-tls", 443, 8443); got != vip {
		t.Fatalf("shn-web holds %s and shn-tls %s", vip, got)
	}
	suite.PinnedBackend(t, l, "shn-web", "node1")
	suite.PinnedBackend(t, l, "shn-web", "node2")
	suite.PinnedBackend(t, l, "shn-tls", "node3")
	waitEndpoints(t, l, "shn-web", "node1", "node2")
	waitEndpoints(t, l, "shn-tls", "node3")
	c := waitCondition(t, l, "shn-web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "SharedLocalIncomplete")
	for _, want := range []string{"Service l2/shn-web has no ready local endpoint on node3", "Service l2/shn-tls has no ready local endpoint on node1, node2"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition message %q lacks %q", c.Message, want)
		}
	}
	t.Logf("shn-web: %s", c.Message)
	owner := harness.Owner(t, l, vip)
	port, app := 80, "shn-web"
	if owner == "node3" {
		port, app = 443, "shn-tls"
	}
	a := httpFrom(t, l, vip, port)
	if a.Node != owner || !strings.HasPrefix(a.Pod, app+"-") {
		t.Errorf("%s:%d answered by %s on %s, want %s's pod on the owner %s", vip, port, a.Pod, a.Node, app, owner)
	}
}

// sharedLocalService creates an externalTrafficPolicy Local Service
// selecting app=name on one port, with the sharing key of its name's
// first part ("shl" for shl-web), and returns its address.
func sharedLocalService(t *testing.T, l *lab.Lab, name string, port, target int32) netip.Addr {
	t.Helper()
	_, ips := suite.Service(t, name, poolL2, func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationAllowSharedIP], _, _ = strings.Cut(name, "-")
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": name}
		s.Spec.Ports = []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}}
	})
	return ips[0]
}

// waitEndpoints waits until the Service's ready endpoints are on nodes.
func waitEndpoints(t *testing.T, l *lab.Lab, name string, nodes ...string) {
	t.Helper()
	if err := l.WaitEndpoints(context.Background(), testNS, name, nodes, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// sharedServed waits until node alone answers for vip, and HTTP on port
// 80 reaches shl-web's pod and on port 443 shl-tls's pod, both on node
// and both seeing the client's own address.
func sharedServed(t *testing.T, l *lab.Lab, vip netip.Addr, node string) {
	t.Helper()
	labkit.Eventually(t, time.Minute, node+" alone answering for "+vip.String(), func() bool {
		a := harness.Probe(t, l, vip)
		return len(a) == 1 && a[0].Node == node
	})
	for _, c := range []struct {
		port int
		app  string
	}{{80, "shl-web"}, {443, "shl-tls"}} {
		var a lab.PodAnswer
		labkit.Eventually(t, 30*time.Second, fmt.Sprintf("%s:%d answered by %s's pod on %s", vip, c.port, c.app, node), func() bool {
			a = httpFrom(t, l, vip, c.port)
			return a.Node == node && strings.HasPrefix(a.Pod, c.app+"-")
		})
		if a.ClientAddr.Addr().String() != lab.ClientIPv4 {
			t.Errorf("%s:%d: the pod %s saw the client as %s, want %s (ETP Local keeps the source)", vip, c.port, a.Pod, a.Client, lab.ClientIPv4)
		}
		t.Logf("%s:%d answered by %s on %s, which saw the client as %s", vip, c.port, a.Pod, a.Node, a.Client)
	}
}

// httpFrom sends one HTTP request from the client to vip:port, waiting
// until some pod answers (kube-proxy may not have the rules yet).
func httpFrom(t *testing.T, l *lab.Lab, vip netip.Addr, port int) lab.PodAnswer {
	t.Helper()
	var a lab.PodAnswer
	labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("an HTTP answer from %s:%d", vip, port), func() (bool, string) {
		var err error
		a, err = l.HTTPGet(context.Background(), lab.Client, vip, port)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return a
}
