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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/internal/announce"
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
	advertisedOnlyFrom(t, l, vip, "bsl", "node2")

	suite.PinnedBackend(t, l, "bsl-tls", "node1")
	tlsOn2()
	if err := l.WaitEndpoints(ctx, testNS, "bsl-tls", []string{"node1", "node3"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	advertisedOnlyFrom(t, l, vip, "bsl", "node1")
}

// sharedLocal creates an externalTrafficPolicy Local Service selecting
// app=name on one port with the sharing key of its name's first part
// ("bsl" for bsl-web) and returns its address.
func sharedLocal(t *testing.T, l *lab.Lab, name string, port, target int32) netip.Addr {
	t.Helper()
	_, ips := suite.Service(t, name, poolMain, func(s *corev1.Service) {
		s.Annotations[v1beta1.AnnotationAllowSharedIP], _, _ = strings.Cut(name, "-")
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": name}
		s.Spec.Ports = []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}}
	})
	return ips[0]
}

// advertisedOnlyFrom waits until node is the router's only next hop for
// vip with a path from node alone, and checks HTTP on ports 80 and 443
// from the external client: answered by key-web's and key-tls's pods on
// node, which see the client's own address.
func advertisedOnlyFrom(t *testing.T, l *lab.Lab, vip netip.Addr, key, node string) {
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
	}{{80, key + "-web"}, {443, key + "-tls"}} {
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

// poolMainFallbackNone is the base pool with spec.sharing.localFallback:
// None.
const poolMainFallbackNone = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: bgp}
spec:
  addresses: [198.51.100.128/29, 2001:db8:ff::/121]
  autoAssign: false
  sharing: {localFallback: None}
`

// TestSharedLocalFallbacks: two externalTrafficPolicy Local Services
// (port 80 and port 443) share an address and no node has a pod of both
// (bsx-web on node1 and node2, bsx-tls on node3). With the pool's
// spec.sharing.localFallback: None no node advertises the address, and
// herald.dev/Announced is False, SharedLocalIncomplete, naming which
// Service lacks local endpoints on which nodes; back to the default
// (SomePorts), every node with a pod of either advertises it and the
// condition is True, SharedLocalIncomplete, saying so. A bsx-tls pod on
// node2 then makes node2 the only one, serving both ports.
func TestSharedLocalFallbacks(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	if len(l.Nodes()) < 3 {
		t.Skip("needs three nodes")
	}
	apply(t, h, poolMainFallbackNone)
	vip := sharedLocal(t, l, "bsx-web", 80, 8080)
	if got := sharedLocal(t, l, "bsx-tls", 443, 8443); got != vip {
		t.Fatalf("bsx-web holds %s and bsx-tls %s: Local Services with different pods must share", vip, got)
	}
	suite.PinnedBackend(t, l, "bsx-web", "node1")
	suite.PinnedBackend(t, l, "bsx-web", "node2")
	suite.PinnedBackend(t, l, "bsx-tls", "node3")
	for name, on := range map[string][]string{"bsx-web": {"node1", "node2"}, "bsx-tls": {"node3"}} {
		if err := l.WaitEndpoints(ctx, testNS, name, on, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	gaps := []string{
		"Service " + testNS + "/bsx-web has no ready local endpoint on node3",
		"Service " + testNS + "/bsx-tls has no ready local endpoint on node1, node2",
	}
	for _, name := range []string{"bsx-web", "bsx-tls"} {
		c := waitServiceCondition(t, l, name, v1beta1.ConditionAnnounced, metav1.ConditionFalse,
			append([]string{"announced from no node", "localFallback: None"}, gaps...)...)
		if c.Reason != announce.ReasonSharedLocalIncomplete {
			t.Errorf("%s: reason %s, want %s", name, c.Reason, announce.ReasonSharedLocalIncomplete)
		}
		t.Logf("%s, localFallback None: %s: %s", name, c.Reason, c.Message)
	}
	// the condition comes from the same decision as the speakers'; the
	// router must have no path for the address, and keep having none
	prefix := host(vip)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if r := route(t, l, prefix); len(r.Paths) > 0 || len(r.FIB) > 0 {
			t.Fatalf("localFallback None: the router has %s from %v (FIB via %v), want no path", prefix, pathPeers(r), r.FIBNodes())
		}
	}

	if err := h.Apply(ctx, baseConfig()); err != nil {
		t.Fatal(err)
	}
	waitFIB(t, l, prefix, "node1", "node2", "node3")
	labkit.EventuallyWhy(t, 30*time.Second, "paths from every node", func() (bool, string) {
		got := pathPeers(route(t, l, prefix))
		return slices.Equal(got, nodeAddrs(l, false)), fmt.Sprintf("paths from %v", got)
	})
	// each Service's condition names the nodes that advertise the
	// address for it: those with its own local endpoints
	for name, by := range map[string]string{"bsx-web": "node1, node2", "bsx-tls": "node3"} {
		c := waitServiceCondition(t, l, name, v1beta1.ConditionAnnounced, metav1.ConditionTrue,
			append([]string{"advertised over BGP by " + by + ";", "localFallback: SomePorts"}, gaps...)...)
		if c.Reason != announce.ReasonSharedLocalIncomplete {
			t.Errorf("%s: reason %s, want %s", name, c.Reason, announce.ReasonSharedLocalIncomplete)
		}
		t.Logf("%s, localFallback SomePorts: %s: %s", name, c.Reason, c.Message)
	}

	suite.PinnedBackend(t, l, "bsx-tls", "node2")
	if err := l.WaitEndpoints(ctx, testNS, "bsx-tls", []string{"node2", "node3"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	advertisedOnlyFrom(t, l, vip, "bsx", "node2")
	for _, name := range []string{"bsx-web", "bsx-tls"} {
		l.WaitServiceCondition(t, testNS, name, v1beta1.ConditionAnnounced, metav1.ConditionTrue, func(c metav1.Condition) bool {
			return c.Reason == announce.ReasonAnnounced && c.Message == "advertised over BGP by node2"
		})
	}
}
