package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// editsConfig: two pools (edit-old created before edit-new) on the last
// /30 of the lab's L2 pool and a free piece of the segment's IPv6 /64,
// announced by one advertisement.
const editsConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: edit-old}
spec:
  addresses: [198.51.100.92/31, "2001:db8:1::a0-2001:db8:1::a3"]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: edit-new}
spec:
  addresses: [198.51.100.94/31, "2001:db8:1::a8-2001:db8:1::ab"]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: edits}
spec:
  ipAddressPools: [edit-old, edit-new]
`

// TestAcceptedEditsKeepAddresses applies, one at a time, the edits the API
// server accepts but Herald cannot use (issue: an accepted edit must never
// withdraw an address) while the client probes every address every 10 ms:
// the object says Valid=False naming the field, its last valid version
// stays in force, and no address goes unanswered or changes. The edits the
// selector policies refuse are refused when applied, naming the field.
func TestAcceptedEditsKeepAddresses(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	hc := applyEditPools(t, l, h)
	_, oldIPs := suite.Service(t, "edit-old", poolL2, dualFrom("edit-old"), "node1", "node2", "node3")
	_, newIPs := suite.Service(t, "edit-new", poolL2, dualFrom("edit-new"), "node1", "node2", "node3")
	vips := append(slices.Clone(oldIPs), newIPs...)

	edits := []struct {
		what, pool, yaml, reason, field string
	}{
		{"the older pool grown into the newer pool's range", "edit-old",
			poolYAML("edit-old", "198.51.100.92/30", "2001:db8:1::a0-2001:db8:1::a3"), "OverlapsPoolInUse", "spec.addresses"},
		{"an entry overlapping another entry of the same pool", "edit-new",
			poolYAML("edit-new", "198.51.100.94/31", "198.51.100.95-198.51.100.95", "2001:db8:1::a8-2001:db8:1::ab"), "InvalidField", "spec.addresses"},
		{"an IPv6 range written backwards", "edit-new",
			poolYAML("edit-new", "198.51.100.94/31", "2001:db8:1::ab-2001:db8:1::a8"), "InvalidField", "spec.addresses"},
	}
	for _, e := range edits {
		mons := monitorAll(t, l, vips)
		start := time.Now()
		if err := h.Apply(ctx, e.yaml); err != nil {
			stopAll(t, vips, mons, start, e.what, 0)
			t.Fatalf("%s: the API server refused the edit: %v", e.what, err)
		}
		waitPoolInvalid(t, hc, e.pool, e.reason, e.field)
		// Give a wrong reaction time to happen before judging.
		_, _ = mons[0].Wait(ctx, time.Now().Add(3*time.Second), func(lab.Probe) bool { return true })
		stopAll(t, vips, mons, start, e.what, 0)
		checkIPs(t, l, "edit-old", oldIPs)
		checkIPs(t, l, "edit-new", newIPs)
		// Undo: the valid version again.
		if err := h.Apply(ctx, editsConfig); err != nil {
			t.Fatal(err)
		}
		waitPoolValid(t, hc, e.pool)
	}

	refused := []struct{ what, yaml, want string }{
		{"operator in lower case in a node selector", `
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: edits}
spec:
  ipAddressPools: [edit-old, edit-new]
  nodeSelectors: [{matchExpressions: [{key: zone, operator: in, values: [a]}]}]
`, "L2Advertisement edits: spec.nodeSelectors: every matchExpressions operator must be In, NotIn, Exists or DoesNotExist"},
		{"In without values in a namespace selector", poolYAML("edit-new", "198.51.100.94/31", "2001:db8:1::a8-2001:db8:1::ab") + `
  serviceAllocation: {namespaceSelectors: [{matchExpressions: [{key: team, operator: In}]}]}
`, "IPAddressPool edit-new: spec.serviceAllocation.namespaceSelectors: matchExpressions with the operator In or NotIn need at least one value"},
	}
	for _, r := range refused {
		err := h.Apply(ctx, r.yaml)
		if err == nil {
			t.Errorf("%s: accepted, want refused by the selector policy", r.what)
			continue
		}
		if !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: refused without naming the object and field %q: %v", r.what, r.want, err)
		}
	}
	for _, vip := range vips {
		if got := harness.Owner(t, l, vip); got == "" {
			t.Errorf("%s unanswered after the refused edits", vip)
		}
	}
}

// applyEditPools applies edit-old, then, a second later so that it is
// the older by its creation time (whole seconds; a tie goes by name),
// editsConfig with edit-new and the L2Advertisement; they are deleted when
// the test ends. It returns a client of Herald's objects.
func applyEditPools(t *testing.T, l *lab.Lab, h *deploy.Herald) versioned.Interface {
	t.Helper()
	ctx := context.Background()
	hc, err := versioned.NewForConfig(l.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(ctx, poolYAML("edit-old", "198.51.100.92/31", "2001:db8:1::a0-2001:db8:1::a3")); err != nil {
		t.Fatal(err)
	}
	old, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, "edit-old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 5*time.Second, "a second past edit-old's creation", func() bool {
		return time.Since(old.CreationTimestamp.Time) > 1100*time.Millisecond
	})
	if err := h.Apply(ctx, editsConfig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = h.Kubectl(context.Background(), "delete", "--ignore-not-found", "--wait=false",
			"l2advertisements.herald.dev/edits", "ipaddresspools.herald.dev/edit-old", "ipaddresspools.herald.dev/edit-new")
	})
	return hc
}

func poolYAML(name string, addrs ...string) string {
	q := make([]string, len(addrs))
	for i, a := range addrs {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("apiVersion: herald.dev/v1beta1\nkind: IPAddressPool\nmetadata: {name: %s}\nspec:\n  addresses: [%s]\n  autoAssign: false\n", name, strings.Join(q, ", "))
}

// waitPoolInvalid waits until the pool says Valid=False with reason and a
// message naming field (the message, logged, says what is kept).
func waitPoolInvalid(t *testing.T, hc versioned.Interface, pool, reason, field string) {
	t.Helper()
	var last string
	labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("pool %s Valid=False %s naming %s", pool, reason, field), func() (bool, string) {
		var seen []string
		for _, name := range []string{"edit-old", "edit-new"} {
			if c := poolValid(t, hc, name); c != nil {
				seen = append(seen, fmt.Sprintf("%s: %s %s %q", name, c.Status, c.Reason, c.Message))
			}
		}
		c := poolValid(t, hc, pool)
		if c == nil {
			return false, strings.Join(seen, "; ")
		}
		last = c.Reason + ": " + c.Message
		return c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, field), strings.Join(seen, "; ")
	})
	t.Logf("pool %s: %s", pool, last)
}

func waitPoolValid(t *testing.T, hc versioned.Interface, pool string) {
	t.Helper()
	labkit.Eventually(t, 30*time.Second, "pool "+pool+" Valid again", func() bool {
		c := poolValid(t, hc, pool)
		return c != nil && c.Status == metav1.ConditionTrue
	})
}

func poolValid(t *testing.T, hc versioned.Interface, pool string) *metav1.Condition {
	t.Helper()
	p, err := hc.HeraldV1beta1().IPAddressPools().Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return apimeta.FindStatusCondition(p.Status.Conditions, v1beta1.ConditionValid)
}

// checkIPs: the Service still shows exactly the addresses it had.
func checkIPs(t *testing.T, l *lab.Lab, name string, want []netip.Addr) {
	t.Helper()
	svc, err := l.Client().CoreV1().Services(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			got = append(got, a)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Service %s shows %v, had %v", name, got, want)
	}
}
