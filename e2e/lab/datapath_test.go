package lab_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/lab"
)

// A dual-stack LoadBalancer Service whose status the test writes by hand
// (no Herald): traffic the client sends to an L2-pool VIP at node1's MAC
// reaches the backend pod on node2 through node1's kube-proxy, for IPv4 and IPv6.
func TestDataPathL2VIPThroughKubeProxy(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, 2*time.Minute)
	vip4, vip6 := addr("198.51.100.64"), addr("2001:db8:1::64")
	servedByHand(t, l, "l2", "node2", vip4, vip6)
	node1, _ := l.Node("node1")
	for _, vip := range []netip.Addr{vip4, vip6} {
		if err := l.SetNeighbor(ctx, lab.Client, vip, node1.MAC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.DeleteNeighbor(ctxFor(t, time.Minute), lab.Client, vip) })
		for _, port := range []int{80, 443} {
			expectPod(t, l, lab.Client, vip, port, "node2")
		}
	}
}

// A BGP-pool VIP with a static route on the router via node1: the external
// client behind the router reaches the backend pod on node2.
func TestDataPathThroughRouter(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, 2*time.Minute)
	vip4, vip6 := addr("198.51.100.130"), addr("2001:db8:ff::10")
	servedByHand(t, l, "bgp", "node2", vip4, vip6)
	node1, _ := l.Node("node1")
	for _, r := range []struct{ vip, via netip.Addr }{{vip4, node1.IPv4}, {vip6, node1.IPv6}} {
		prefix := netip.PrefixFrom(r.vip, r.vip.BitLen())
		if err := l.ReplaceRoute(ctx, lab.Router, prefix, r.via); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.DeleteRoute(ctxFor(t, time.Minute), lab.Router, prefix) })
		route, err := l.RouterRoutes(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(route.FIBNodes()) != "[node1]" {
			t.Errorf("router FIB for %s: %+v", prefix, route.FIB)
		}
		expectPod(t, l, lab.External, r.vip, 80, "node2")
	}
}

// servedByHand creates a dual-stack LoadBalancer Service datapath/name
// with its pod on node and writes vip4 and vip6 into its status, as Herald
// would; the Service is deleted when the test ends.
func servedByHand(t *testing.T, l *lab.Lab, name, node string, vip4, vip6 netip.Addr) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	svc := lab.LoadBalancerService("datapath", name, corev1.IPv4Protocol, corev1.IPv6Protocol)
	if _, err := l.CreateService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.DeleteService(ctxFor(t, time.Minute), svc.Namespace, svc.Name) })
	if err := l.SetEndpoints(ctx, svc, node); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLoadBalancerIngress(ctx, svc, vip4, vip6); err != nil {
		t.Fatal(err)
	}
}

// expectPod polls (kube-proxy programs new rules within seconds) until an
// HTTP request from host to vip:port is answered by a backend pod on node.
func expectPod(t *testing.T, l *lab.Lab, host string, vip netip.Addr, port int, node string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	var got lab.PodAnswer
	eventually(t, 30*time.Second, fmt.Sprintf("%s -> %s port %d answered by a pod on %s", host, vip, port, node), func() error {
		var err error
		got, err = l.HTTPGet(ctx, host, vip, port)
		if err == nil && got.Node != node {
			err = fmt.Errorf("answered by %s on %s", got.Pod, got.Node)
		}
		return err
	})
	t.Logf("%s -> %s answered by %s, which saw client %s", host, netip.AddrPortFrom(vip, uint16(port)), got.Pod, got.Client)
}
