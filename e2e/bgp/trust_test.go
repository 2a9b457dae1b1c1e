package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// trustConfig is an L2 pool beside the BGP pools, announced by ARP/NDP
// only, inside the lab's L2 range.
const trustConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: l2-trust}
spec:
  addresses: [198.51.100.88/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: l2-trust}
spec:
  ipAddressPools: [l2-trust]
`

// TestPoolAnnotationNeverMisroutes: a tenant who rewrites the record
// herald.dev/ip-allocated-from-pool of an L2 Service to the BGP pool's
// name, again and again, while the controller runs, while it is scaled to
// 0 and after it is back, never gets a route for the L2 address (or a
// prefix covering it) on the router: the speakers find an address's pool
// in the configuration. Once the controller is back the record is right
// again.
func TestPoolAnnotationNeverMisroutes(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	apply(t, h, trustConfig, "ipaddresspool/l2-trust", "l2advertisement/l2-trust")
	_, ips := suite.Service(t, "l2-liar", "l2-trust", nil, allNodes(l)...)
	ip := ips[0]
	mon := lab.StartRouteMonitor(t, l)

	stopEdits := editPoolRecordInALoop(t, l, "l2-liar", poolMain)
	phase := func(what string, d time.Duration) {
		t.Logf("%s: editing the record for %s", what, d)
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			checkNoRouteCovering(t, l, mon, ip)
			time.Sleep(200 * time.Millisecond)
		}
	}
	phase("controller running", 4*time.Second)
	replicas := scaleController(t, h, 0)
	t.Cleanup(func() { scaleController(t, h, replicas) })
	labkit.Eventually(t, 60*time.Second, "no controller pod", func() bool {
		pods, err := h.Pods(ctx, "controller")
		return err == nil && len(pods) == 0
	})
	phase("controller scaled to 0", 8*time.Second)
	scaleController(t, h, replicas)
	if _, err := h.WaitLeader(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	phase("controller back", 4*time.Second)
	edits := stopEdits()
	t.Logf("%d edits of the record", edits)
	if edits < 20 {
		t.Fatalf("only %d edits of the record: the loop did not run", edits)
	}
	labkit.Eventually(t, 30*time.Second, "the record names the L2 pool again", func() bool {
		s, err := l.Client().CoreV1().Services(testNS).Get(ctx, "l2-liar", metav1.GetOptions{})
		return err == nil && s.Annotations[v1beta1.AnnotationAllocatedFromPool] == "l2-trust"
	})
	checkNoRouteCovering(t, l, mon, ip)
}

// editPoolRecordInALoop sets the Service's pool record to pool every
// 100 ms, as a tenant could, until the returned function is called; it
// returns how many edits were made.
func editPoolRecordInALoop(t *testing.T, l *lab.Lab, name, pool string) func() int {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1beta1.AnnotationAllocatedFromPool: pool}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s, err := l.Client().CoreV1().Services(testNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil || s.Annotations[v1beta1.AnnotationAllocatedFromPool] == pool {
				continue // already the lie: nothing to write
			}
			if _, err := l.Client().CoreV1().Services(testNS).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "tenant"}); err == nil {
				n++
			}
		}
	}()
	stopped := false
	stop := func() int {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
		return n
	}
	t.Cleanup(func() { stop() })
	return stop
}

// checkNoRouteCovering fails the test when the router's FIB ever had a
// route for a prefix containing ip (from the monitor, which misses no
// change), or its RIB has one now.
func checkNoRouteCovering(t *testing.T, l *lab.Lab, mon *lab.RouteMonitor, ip netip.Addr) {
	t.Helper()
	for _, ev := range mon.Events(t) {
		if ev.Prefix.Contains(ip) {
			t.Fatalf("the router installed or removed %s (deleted %v at %s), which covers the L2 address %s", ev.Prefix, ev.Deleted, ev.At.Format(time.RFC3339Nano), ip)
		}
	}
	if r := route(t, l, host(ip)); len(r.Paths) > 0 || len(r.FIB) > 0 {
		t.Fatalf("the router has a route for the L2 address %s: %+v", ip, r)
	}
}

// scaleController sets the controller Deployment's replicas and returns
// how many it had.
func scaleController(t *testing.T, h *deploy.Herald, replicas int32) int32 {
	t.Helper()
	ctx := context.Background()
	deps := h.Lab.Client().AppsV1().Deployments(deploy.Namespace)
	d, err := deps.Get(ctx, "herald-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was := int32(1)
	if d.Spec.Replicas != nil {
		was = *d.Spec.Replicas
	}
	if _, err := h.Kubectl(ctx, "-n", deploy.Namespace, "scale", "deployment/herald-controller", fmt.Sprintf("--replicas=%d", replicas)); err != nil {
		t.Fatal(err)
	}
	return was
}
