package bgp

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/lab"
)

// peerUnnumberedHold3 is peerUnnumbered with hold time 3 s, keepalive 1 s.
var peerUnnumberedHold3 = fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router}
spec:
  myASN: %d
  dynamicASN: external
  interface: %s
  holdTime: 3s
  keepaliveTime: 1s
  connectTime: 2s
`, lab.NodeASN, lab.UnnumberedNodeIf)

// BenchmarkBGPUnnumbered: the unnumbered layout (TestUnnumbered), hold
// time 3 s, no BFD: the time from the BGPPeer naming the interface until
// the router has every node's session up; for 5 Services, from the
// create call until the IPv4 /32 is in FRR's FIB via the link-local next
// hops of all 3 nodes (endpoints set by hand, no pods); and a node paused (rotating over the nodes) until
// its next hop is gone from the FIB.
func BenchmarkBGPUnnumbered(b *testing.B) {
	const services, losses = 5, 3
	l, h := suite.Herald(b)
	all := allNodes(l)
	ctx := context.Background()
	for iter := range b.N {
		if err := l.AddUnnumberedLinks(ctx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.RemoveUnnumberedLinks(context.Background()) })
		reconfigureRouter(b, l, lab.FRR, lab.BGPOptions{Unnumbered: true, HoldTime: 3, Keepalive: 1})
		start := time.Now()
		apply(b, h, peerUnnumberedHold3)
		waitUnnumbered(b, l, all)
		up := time.Since(start)
		b.Logf("unnumbered: BGPPeer applied -> every node's session up on the router after %v", up.Round(time.Millisecond))
		b.ReportMetric(up.Seconds(), "s-sessions-up")

		var toFIB, gone []time.Duration
		for i := range services {
			name := fmt.Sprintf("unnumbered-%d-%d", iter, i)
			b.Cleanup(func() { _ = l.DeleteService(context.Background(), testNS, name) })
			start := time.Now()
			svc := lab.LoadBalancerService(testNS, name, corev1.IPv4Protocol)
			svc.Annotations = map[string]string{"herald.dev/address-pool": poolMain}
			created, err := l.CreateService(ctx, svc)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.SetEndpoints(ctx, created, all...); err != nil {
				b.Fatal(err)
			}
			prefix := host(addressOf(b, l, name))
			for !slices.Equal(fibVia(b, l, prefix), all) {
				if time.Since(start) > 30*time.Second {
					b.Fatalf("%s not via every node after 30 s", prefix)
				}
				time.Sleep(10 * time.Millisecond)
			}
			toFIB = append(toFIB, time.Since(start))
			if i == 0 {
				for r := range losses {
					node := all[r%len(all)]
					gone = append(gone, nodeLoss(b, l, prefix, node))
					waitFIB(b, l, prefix, all...)
				}
			}
		}
		report(b, "unnumbered: create -> /32 in FRR's FIB via 3 link-local next hops", "create", toFIB)
		report(b, "unnumbered, HoldTime-3s: node paused -> next hop gone from FRR's FIB", "detect", gone)
	}
}
