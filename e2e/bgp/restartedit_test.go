package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// restartConfig: two pools, restart-old created a second before
// restart-new, advertised to the router from every node; applied with the
// router's peer with graceful restart, so that a speaker's restart keeps
// its routes at the router (docs/failover.md#graceful-restart).
const restartConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: restart-new}
spec:
  addresses: [198.51.100.162/31, "2001:db8:ff::1:8/127"]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: restart}
spec:
  ipAddressPools: [restart-old, restart-new]
---
`

const restartOld = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: restart-old}
spec:
  addresses: [%s]
  autoAssign: false
`

// TestRestartsDuringRefusedEditKeepRoutes accepts a bad edit (the older
// pool grown over the newer pool in use), then restarts the controller and
// every speaker (kubectl rollout restart) while a client of the router
// reads its routes for both pools' addresses every 100 ms: the next hops
// never change, no Service changes address, and the newer pool stays in
// force. Every process that starts reads the version in force from the
// pools' status.inForce; without it the restarted speakers would give the
// newer pool's IPv4 addresses to the grown older pool and stop
// advertising its IPv6 ones.
func TestRestartsDuringRefusedEditKeepRoutes(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	hc := heraldClient(t, l)
	apply(t, h, fmt.Sprintf(restartOld, `198.51.100.160/31, "2001:db8:ff::1:0/127"`), "ipaddresspools.herald.dev/restart-old", "ipaddresspools.herald.dev/restart-new",
		"bgpadvertisements.herald.dev/restart")
	old, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, "restart-old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 5*time.Second, "a second past restart-old's creation", func() bool {
		return time.Since(old.CreationTimestamp.Time) > 1100*time.Millisecond
	})
	if err := h.Apply(ctx, restartConfig+peerYAML(peerV4, "gracefulRestart: true")); err != nil {
		t.Fatal(err)
	}
	all := allNodes(l)
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	_, oldIPs := suite.Service(t, "restart-old", "restart-old", dualStack, all...)
	_, newIPs := suite.Service(t, "restart-new", "restart-new", dualStack, all...)
	vips := append(slices.Clone(oldIPs), newIPs...)
	for _, vip := range vips {
		waitFIB(t, l, host(vip), all...)
	}

	// The edit covers the newer pool's IPv4 addresses, not its IPv6 ones.
	if err := h.Apply(ctx, fmt.Sprintf(restartOld, `198.51.100.160/30, "2001:db8:ff::1:0/127"`)); err != nil {
		t.Fatalf("the API server refused the edit: %v", err)
	}
	labkit.Eventually(t, 30*time.Second, "restart-old Valid=False OverlapsPoolInUse", func() bool {
		return poolKept(ctx, hc, "restart-old")
	})
	if err := h.WaitRollout(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	mon := startRouteMonitor(l, vips, 100*time.Millisecond)
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
	t.Logf("controller and %d speakers restarted in %v", len(all), time.Since(start).Round(100*time.Millisecond))
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	// Give a wrong decision of the new speakers time to reach the router:
	// 50 more rounds of reads (5 s).
	mon.waitRounds(t, 50)
	changes, reads := mon.stop()
	t.Logf("%d reads of the router's routes for %v over %v", reads, vips, time.Since(start).Round(100*time.Millisecond))
	for _, vip := range vips {
		for _, c := range changes[vip] {
			t.Errorf("%s: next hops %v", vip, c)
		}
		if got := sortedNodes(route(t, l, host(vip))); !slices.Equal(got, all) {
			t.Errorf("%s via %v after the restarts, want %v", vip, got, all)
		}
	}
	n := 0
	for _, c := range changes {
		n += len(c)
	}
	t.Logf("%d route changes", n)
	for name, want := range map[string][]netip.Addr{"restart-old": oldIPs, "restart-new": newIPs} {
		svc, err := l.Client().CoreV1().Services(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []netip.Addr
		for _, in := range svc.Status.LoadBalancer.Ingress {
			got = append(got, netip.MustParseAddr(in.IP))
		}
		if !slices.Equal(got, want) {
			t.Errorf("Service %s shows %v, had %v", name, got, want)
		}
	}
	if !poolKept(ctx, hc, "restart-old") {
		t.Error("restart-old no longer kept at its last valid version after the restarts")
	}
}

// poolKept: the pool's Valid condition says an overlap with a pool in use
// keeps its last valid version.
func poolKept(ctx context.Context, hc versioned.Interface, name string) bool {
	p, err := hc.HeraldV1beta1().IPAddressPools().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "Valid" && c.Status == metav1.ConditionFalse && c.Reason == "OverlapsPoolInUse" &&
			strings.Contains(c.Message, "keeping the last valid version") {
			return true
		}
	}
	return false
}

// routeMonitor reads the router's FIB next hops of some addresses in a
// loop and keeps every change (after the first read), with its time.
type routeMonitor struct {
	stopc   chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	changes map[netip.Addr][]string
	reads   int
	rounds  int
}

func startRouteMonitor(l *lab.Lab, vips []netip.Addr, every time.Duration) *routeMonitor {
	m := &routeMonitor{stopc: make(chan struct{}), done: make(chan struct{}), changes: map[netip.Addr][]string{}}
	go func() {
		defer close(m.done)
		last := map[netip.Addr][]string{}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, vip := range vips {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := l.RouterRoutes(ctx, host(vip))
				cancel()
				m.mu.Lock()
				m.reads++
				got := sortedNodes(r)
				if err != nil {
					m.changes[vip] = append(m.changes[vip], fmt.Sprintf("%s: read failed: %v", time.Now().Format(time.StampMilli), err))
				} else if prev, seen := last[vip]; seen && !slices.Equal(prev, got) {
					m.changes[vip] = append(m.changes[vip], fmt.Sprintf("%s: %v -> %v", time.Now().Format(time.StampMilli), prev, got))
				}
				if err == nil {
					last[vip] = got
				}
				m.mu.Unlock()
			}
			m.mu.Lock()
			m.rounds++
			m.mu.Unlock()
			select {
			case <-m.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// waitRounds waits until the monitor has read every route n more times.
func (m *routeMonitor) waitRounds(t testing.TB, n int) {
	t.Helper()
	m.mu.Lock()
	want := m.rounds + n
	m.mu.Unlock()
	labkit.Eventually(t, time.Minute, fmt.Sprintf("%d more reads of the router's routes", n), func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.rounds >= want
	})
}

func (m *routeMonitor) stop() (map[netip.Addr][]string, int) {
	close(m.stopc)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changes, m.reads
}
