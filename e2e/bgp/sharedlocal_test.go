package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestSharedLocalAdvertisedWhereBothRun: two externalTrafficPolicy Local
// Services (port 80 and port 443) of different Deployments share one
// address; exactly one node has a pod of both, and the router learns the
// address from that node alone (the nodes with one of them advertise
// nothing); HTTP on both ports from the external client reaches pods on
// it, which see the client's own address. Moving a pod moves the path.
func TestSharedLocalAdvertisedWhereBothRun(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	if len(l.Nodes()) < 3 {
		t.Skip("needs three nodes")
	}
	// the Services first: creating one creates the namespace
	vip := sharedLocal(t, l, "bsl-web", 80, 8080)
	if got := sharedLocal(t, l, "bsl-tls", 443, 8443); got != vip {
		t.Fatalf("bsl-web holds %s and bsl-tls %s: Local Services with different pods must share", vip, got)
	}
	suite.PinnedBackend(t, l, "bsl-web", "node1")
	suite.PinnedBackend(t, l, "bsl-web", "node2")
	tlsOn2 := suite.PinnedBackend(t, l, "bsl-tls", "node2")
	suite.PinnedBackend(t, l, "bsl-tls", "node3")
	for name, on := range map[string][]string{"bsl-web": {"node1", "node2"}, "bsl-tls": {"node2", "node3"}} {
		if err := l.WaitEndpoints(ctx, testNS, name, on, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	advertisedOnlyFrom(t, l, vip, "node2")

	suite.PinnedBackend(t, l, "bsl-tls", "node1")
	tlsOn2()
	if err := l.WaitEndpoints(ctx, testNS, "bsl-tls", []string{"node1", "node3"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	advertisedOnlyFrom(t, l, vip, "node1")
}

// sharedLocal creates an externalTrafficPolicy Local Service selecting
// app=name on one port with the sharing key "bsl" and returns its
// address.
func sharedLocal(t *testing.T, l *lab.Lab, name string, port, target int32) netip.Addr {
	t.Helper()
	_, ips := suite.Service(t, name, poolMain, func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationAllowSharedIP] = "bsl"
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": name}
		s.Spec.Ports = []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}}
	})
	return ips[0]
}

// advertisedOnlyFrom waits until node is the router's only next hop for
// vip with a path from node alone, and checks HTTP on ports 80 and 443
// from the external client: answered by bsl-web's and bsl-tls's pods on
// node, which see the client's own address.
func advertisedOnlyFrom(t *testing.T, l *lab.Lab, vip netip.Addr, node string) {
	t.Helper()
	prefix := host(vip)
	waitFIB(t, l, prefix, node)
	want := nodeAddrs(l, false, node)
	labkit.EventuallyWhy(t, 30*time.Second, "a path from "+node+" only", func() (bool, string) {
		got := pathPeers(route(t, l, prefix))
		return slices.Equal(got, want), fmt.Sprintf("paths from %v", got)
	})
	for _, c := range []struct {
		port int
		app  string
	}{{80, "bsl-web"}, {443, "bsl-tls"}} {
		var a lab.PodAnswer
		labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("%s:%d answered by %s's pod on %s", vip, c.port, c.app, node), func() (bool, string) {
			var err error
			a, err = l.HTTPGet(context.Background(), lab.External, vip, c.port)
			if err != nil {
				return false, err.Error()
			}
			return a.Node == node && strings.HasPrefix(a.Pod, c.app+"-"), "answered by " + a.Pod + " on " + a.Node
		})
		if a.ClientAddr.Addr().String() != lab.ExternalIPv4 {
			t.Errorf("%s:%d: the pod %s saw the client as %s, want %s (Local keeps the source)", vip, c.port, a.Pod, a.Client, lab.ExternalIPv4)
		}
		t.Logf("%s:%d answered by %s on %s, which saw the client as %s", vip, c.port, a.Pod, a.Node, a.Client)
	}
}
