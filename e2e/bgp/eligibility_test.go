package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestLocalTrafficPolicyNextHops: with externalTrafficPolicy Local only
// the nodes with a local endpoint are next hops, and moving the endpoints
// moves the next hops; the client's address reaches the pod unchanged.
func TestLocalTrafficPolicyNextHops(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	svc, ips := suite.Service(t, "local", poolMain, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}, "node3")
	prefix := host(ips[0])
	waitFIB(t, l, prefix, "node3")

	if err := l.SetEndpoints(ctx, svc, "node1", "node2"); err != nil {
		t.Fatal(err)
	}
	waitFIB(t, l, prefix, "node1", "node2")
	// The FIB and the RIB are read one after the other: node3's
	// withdrawal, sent within milliseconds of the others' announcements,
	// may be in one read and not yet in the other (seen in CI).
	want := nodeAddrs(l, false, "node1", "node2")
	labkit.EventuallyWhy(t, 30*time.Second, "paths from node1 and node2 only", func() (bool, string) {
		got := pathPeers(route(t, l, prefix))
		return slices.Equal(got, want), fmt.Sprintf("paths from %v", got)
	})
	var answer lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+ips[0].String(), func() bool {
		var err error
		answer, err = l.HTTPGet(ctx, lab.External, ips[0], 80)
		return err == nil
	})
	if answer.Node != "node1" && answer.Node != "node2" {
		t.Errorf("answered by %s, want the pod on node1 or node2", answer.Pod)
	}
	if answer.ClientAddr.Addr().String() != lab.ExternalIPv4 {
		t.Errorf("the pod saw the client as %s, want %s (Local keeps the source)", answer.Client, lab.ExternalIPv4)
	}

	if err := l.SetEndpoints(ctx, svc, "node2"); err != nil {
		t.Fatal(err)
	}
	waitFIB(t, l, prefix, "node2")
}

// TestIneligibleNodeLosesNextHop: the exclusion label, the
// ToBeDeletedByClusterAutoscaler taint each take that node's
// next hop away, while the other nodes' next hops stay throughout; undoing
// the change brings it back. NotReady alone does not (KEP-3458).
func TestIneligibleNodeLosesNextHop(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	all := allNodes(l)
	_, ips := suite.Service(t, "eligible", poolMain, dualStack, all...)
	v4, v6 := host(ips[0]), host(ips[1])
	waitFIB(t, l, v4, all...)
	waitFIB(t, l, v6, all...)

	cases := []struct {
		what         string
		node         string
		change, undo func(node string) error
	}{
		{"exclusion label", "node1",
			func(n string) error { return l.SetNodeLabel(ctx, n, corev1.LabelNodeExcludeBalancers, "") },
			func(n string) error { return l.RemoveNodeLabel(ctx, n, corev1.LabelNodeExcludeBalancers) }},
		{"autoscaler taint", "node2",
			func(n string) error {
				return l.AddNodeTaint(ctx, n, corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: "1700000000", Effect: corev1.TaintEffectNoSchedule})
			},
			func(n string) error { return l.RemoveNodeTaint(ctx, n, "ToBeDeletedByClusterAutoscaler") }},
	}
	for _, c := range cases {
		others := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == c.node })
		start := time.Now()
		if err := c.change(c.node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.undo(c.node) })
		for _, p := range []netip.Prefix{v4, v6} {
			fibStays(t, l, p, others, c.what+" on "+c.node, func(r lab.Route) bool {
				return slices.Equal(sortedNodes(r), others) && len(r.Paths) == len(others)
			})
		}
		t.Logf("%s on %s: its next hop gone after %v, %v stayed", c.what, c.node, time.Since(start).Round(time.Millisecond), others)
		if err := c.undo(c.node); err != nil {
			t.Fatal(err)
		}
		for _, p := range []netip.Prefix{v4, v6} {
			fibStays(t, l, p, others, "undoing "+c.what, func(r lab.Route) bool { return slices.Equal(sortedNodes(r), all) })
		}
	}

	// NotReady with a live speaker keeps advertising (KEP-3458): node3's
	// kubelet stops, the node lifecycle controller marks it NotReady
	if err := l.StopKubelet("node3"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.EnsureKubelet(context.Background(), "node3") })
	labkit.Eventually(t, lab.NodeMonitorGracePeriod+time.Minute, "node3 NotReady", func() bool {
		n, err := l.Client().CoreV1().Nodes().Get(ctx, "node3", metav1.GetOptions{})
		return err == nil && !lab.NodeIsReady(n)
	})
	stableFIB(t, l, v4, all, 5*time.Second)
	if err := l.StartKubelet(ctx, "node3"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitNodesReady(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	// "false" does not exclude
	if err := l.SetNodeLabel(ctx, "node1", corev1.LabelNodeExcludeBalancers, "false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.RemoveNodeLabel(ctx, "node1", corev1.LabelNodeExcludeBalancers) })
	stableFIB(t, l, v4, all, 2*time.Second)
}

// stableFIB checks that prefix keeps exactly nodes as next hops during an
// observation window (a change that should move nothing is given that long
// to move something).
func stableFIB(t *testing.T, l *lab.Lab, prefix netip.Prefix, nodes []string, window time.Duration) {
	t.Helper()
	end := time.Now().Add(window)
	for time.Now().Before(end) {
		r := route(t, l, prefix)
		if got := sortedNodes(r); !slices.Equal(got, nodes) {
			t.Fatalf("%s via %v during the observation window, want %v", prefix, got, nodes)
		}
	}
}
