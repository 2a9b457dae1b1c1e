package l2

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestRestartsDuringRefusedEditChangeNothing accepts a bad edit (the older
// pool grown over the newer pool in use), then restarts the controller and
// every speaker (kubectl rollout restart, as an upgrade or a key rotation
// does) while the client probes every address every 10 ms. Every process
// that starts reads the version in force from the pools' status.inForce:
// no address goes dark or is answered twice beyond a plain rolling
// update, every address ends with the owner it had, no Service changes
// address, and the newer pool stays in force. Without the record, the new
// processes would build from the edit: the older pool grown, the newer
// one left out and its addresses dark.
func TestRestartsDuringRefusedEditChangeNothing(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	hc := applyEditPools(t, l, h)
	_, oldIPs := suite.Service(t, "restart-old", poolL2, dualFrom("edit-old"), "node1", "node2", "node3")
	_, newIPs := suite.Service(t, "restart-new", poolL2, dualFrom("edit-new"), "node1", "node2", "node3")
	vips := append(slices.Clone(oldIPs), newIPs...)
	labkit.Eventually(t, 30*time.Second, "both pools' records in force", func() bool {
		for _, name := range []string{"edit-old", "edit-new"} {
			p, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.InForce == nil || p.Status.InForce.Generation != p.Generation {
				return false
			}
		}
		return true
	})

	if err := h.Apply(ctx, poolYAML("edit-old", "198.51.100.92/30", "2001:db8:1::a0-2001:db8:1::a3")); err != nil {
		t.Fatalf("the API server refused the edit: %v", err)
	}
	waitPoolInvalid(t, hc, "edit-old", "OverlapsPoolInUse", "spec.addresses")
	owners := map[netip.Addr]string{}
	for _, vip := range vips {
		owners[vip] = harness.Owner(t, l, vip)
	}
	waitAvailable(t, h)

	mons := monitorAll(t, l, vips)
	start := time.Now()
	for _, w := range []string{"deployment/" + deploy.ControllerDeployment, "daemonset/" + deploy.SpeakerDaemonSet} {
		if _, err := l.Kubectl(ctx, "-n", deploy.Namespace, "rollout", "restart", w); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{"deployment/" + deploy.ControllerDeployment, "daemonset/" + deploy.SpeakerDaemonSet} {
		if _, err := l.Kubectl(ctx, "-n", deploy.Namespace, "rollout", "status", w, "--timeout=300s"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("controller and %d speakers restarted in %v", len(l.Nodes()), time.Since(start).Round(100*time.Millisecond))
	// Give a wrong decision of the new processes time to show.
	_, _ = mons[0].Wait(ctx, time.Now().Add(5*time.Second), func(lab.Probe) bool { return true })
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		what := "restarts during the refused edit, " + vips[i].String()
		lab.CheckServed(t, what, probes.After(start), lab.Rolling())
		t.Logf("%s: owners in turn %v (the rolling update hands an address over and back)", what, ownerRuns(probes.After(start)))
	}
	changed := 0
	for _, vip := range vips {
		if got := harness.Owner(t, l, vip); got != owners[vip] {
			changed++
			t.Errorf("%s answered by %s after the restarts, was %s", vip, got, owners[vip])
		}
	}
	t.Logf("%d of %d addresses end with another owner", changed, len(vips))
	checkIPs(t, l, "restart-old", oldIPs)
	checkIPs(t, l, "restart-new", newIPs)
	if c := poolValid(t, hc, "edit-new"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("pool edit-new Valid = %+v after the restarts, want True (in force)", c)
	}
	waitPoolInvalid(t, hc, "edit-old", "OverlapsPoolInUse", "spec.addresses")
	p, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, "edit-old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Status.InForce; r == nil || !slices.Equal(r.Spec.Addresses, []string{"198.51.100.92/31", "2001:db8:1::a0-2001:db8:1::a3"}) {
		t.Errorf("pool edit-old's record = %+v, want its last valid version", r)
	}
}

// dualFrom makes a Service dual-stack from pool.
func dualFrom(pool string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Annotations["herald.dev/address-pool"] = pool
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy = &p
	}
}

// ownerRuns lists the nodes that answered alone, in turn.
func ownerRuns(probes lab.ProbeLog) []string {
	var runs []string
	for _, p := range probes {
		if n := p.Nodes(); len(n) == 1 && (len(runs) == 0 || runs[len(runs)-1] != n[0]) {
			runs = append(runs, n[0])
		}
	}
	return runs
}
