package l2

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

const excludeLabel = corev1.LabelNodeExcludeBalancers

// moveOwner applies change to the current owner, checks that another node
// takes the address over with a gratuitous ARP, then undoes the change.
func moveOwner(t *testing.T, l *lab.Lab, vip netipAddr, what string, change, undo func(node string) error) {
	t.Helper()
	before := harness.Owner(t, l, vip)
	watch, err := l.WatchGratuitous()
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	if err := change(before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = undo(before) })
	var after string
	labkit.Eventually(t, 30*time.Second, what+": another node answering", func() bool {
		a := harness.Probe(t, l, vip)
		if len(a) == 1 && a[0].Node != before {
			after = a[0].Node
		}
		return after != ""
	})
	got, err := watch.Stop()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := got.First(vip, after, changed)
	if !ok {
		t.Errorf("%s: no gratuitous ARP from the new owner %s", what, after)
	} else {
		t.Logf("%s on %s: %s took over, gratuitous ARP after %v", what, before, after, g.At.Sub(changed).Round(time.Millisecond))
	}
	if err := undo(before); err != nil {
		t.Fatal(err)
	}
	// undoing the change gives the address back to its first owner (the
	// rendezvous order did not change): wait for that hand-back to finish
	labkit.Eventually(t, 30*time.Second, what+" undone: "+before+" answering again", func() bool {
		a := harness.Probe(t, l, vip)
		return len(a) == 1 && a[0].Node == before
	})
}

func TestEligibilityMovesTheAddress(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "eligible", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	moveOwner(t, l, vip, "exclusion label", func(n string) error { return l.SetNodeLabel(ctx, n, excludeLabel, "") },
		func(n string) error { return l.RemoveNodeLabel(ctx, n, excludeLabel) })
	moveOwner(t, l, vip, "autoscaler taint", func(n string) error {
		return l.AddNodeTaint(ctx, n, corev1.Taint{Key: "ToBeDeletedByClusterAutoscaler", Value: "1700000000", Effect: corev1.TaintEffectNoSchedule})
	}, func(n string) error { return l.RemoveNodeTaint(ctx, n, "ToBeDeletedByClusterAutoscaler") })

	// "false" does not exclude
	first := harness.Owner(t, l, vip)
	if err := l.SetNodeLabel(ctx, first, excludeLabel, "false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.RemoveNodeLabel(ctx, first, excludeLabel) })
	stableOwner(t, l, vip, first, time.Second)

	// every node excluded: nobody answers, and the Service says why
	for _, n := range l.Nodes() {
		if err := l.SetNodeLabel(ctx, n.Name, excludeLabel, "true"); err != nil {
			t.Fatal(err)
		}
		name := n.Name
		t.Cleanup(func() { _ = l.RemoveNodeLabel(ctx, name, excludeLabel) })
	}
	harness.Nobody(t, l, vip)
	waitCondition(t, l, "eligible", v1beta1.ConditionAnnounced, metav1.ConditionFalse, "NoEligibleNode")
	waitEvent(t, l, "eligible", "UnAvailableLoadBalancer")
}

func TestLocalTrafficPolicyFollowsEndpoints(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	svc, ips := suite.Service(t, "local", poolL2, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}, "node3")
	if got := harness.Owner(t, l, ips[0]); got != "node3" {
		t.Fatalf("endpoints on node3, answered by %s", got)
	}
	if err := l.SetEndpoints(ctx, svc, "node1"); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 30*time.Second, "ownership follows the endpoints to node1", func() bool {
		a := harness.Probe(t, l, ips[0])
		return len(a) == 1 && a[0].Node == "node1"
	})
}
