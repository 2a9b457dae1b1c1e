// Package bgp holds the end-to-end tests and benchmarks of Herald's BGP
// mode, in the lab (e2e/lab): Herald installed by e2e/deploy, its
// controller Deployment and speaker DaemonSet running as Pods on the
// lab's nodes, a real router (FRR, and BIRD 2 for one test) that learns
// the Services' routes, and an external client behind the router for the
// data path.
package bgp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
)

func TestMain(m *testing.M) { lab.Main(m, lab.Options{Nodes: 3}) }

const testNS = "bgp"

// Pools (the lab's BGP range is 198.51.100.128/27 and 2001:db8:ff::/120;
// these addresses only live in the router's RIB and the nodes' kube-proxy):
const (
	poolMain  = "bgp"   // 198.51.100.128/29, 2001:db8:ff::/121: the base advertisement
	poolAttrs = "attrs" // 198.51.100.136/29, 2001:db8:ff::80/122: per-test advertisements
	poolAgg   = "agg"   // 198.51.100.144/28: aggregation
	peerV4    = "router"
	peerV6    = "router-v6"
)

// baseConfig is what every test starts from: one pool advertised to the
// router over an IPv4 session from every node (both families ride on it,
// MP-BGP), plus pools without advertisement for the tests to use, a BFD
// profile and a Community alias. Tests that change an object put it back
// by applying baseConfig again (server-side apply of the same manager
// also removes the fields a test added).
func baseConfig() string { return fmt.Sprintf(baseConfigFormat, peerYAML(peerV4)) }

// baseConfigFormat is baseConfig with %s for its BGPPeer.
const baseConfigFormat = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: bgp}
spec:
  addresses: [198.51.100.128/29, 2001:db8:ff::/121]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: attrs}
spec:
  addresses: [198.51.100.136/29, 2001:db8:ff::80/122]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: agg}
spec:
  addresses: [198.51.100.144/28]
  autoAssign: false
---
%s---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: bgp}
spec:
  ipAddressPools: [bgp]
---
apiVersion: herald.dev/v1beta1
kind: BFDProfile
metadata: {name: fast}
spec:
  receiveInterval: 100
  transmitInterval: 100
  detectMultiplier: 3
---
apiVersion: herald.dev/v1beta1
kind: Community
metadata: {name: well-known}
spec:
  communities:
    - {name: no-export, value: "65535:65281"}
    - {name: edge, value: "large:64512:7:7"}
`

// suite is Herald in the package's lab. Every test starts from the base
// configuration, the default FRR router, and the nodes' IPv4 sessions
// established.
var suite = &harness.Suite{
	Namespace:  testNS,
	BaseConfig: baseConfig(),
	Prepare: func(ctx context.Context, l *lab.Lab, h *deploy.Herald) error {
		if err := h.Apply(ctx, baseConfig()); err != nil {
			return err
		}
		if defaultRouter(l) {
			return nil
		}
		return l.ReconfigureRouter(ctx, lab.FRR, lab.BGPOptions{})
	},
	Settle: func(t testing.TB, l *lab.Lab) { waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...) },
}

// defaultRouter: FRR with the lab's defaults is running.
func defaultRouter(l *lab.Lab) bool {
	c := l.RouterConfig()
	return l.RouterKind() == lab.FRR && len(c.Neighbors) == 0 && c.ASN == lab.RouterASN &&
		c.PeerASN == lab.NodeASN && c.HoldTime == 9 && c.Keepalive == 3 && !c.ListenRangeBFD
}

// reconfigureRouter restarts the router with opts for the rest of the
// test, and restores the default FRR router at its end.
func reconfigureRouter(t testing.TB, l *lab.Lab, kind lab.RouterKind, opts lab.BGPOptions) {
	t.Helper()
	t.Cleanup(func() {
		if err := l.ReconfigureRouter(context.Background(), lab.FRR, lab.BGPOptions{}); err != nil {
			t.Errorf("restoring the default router: %v", err)
		}
	})
	if err := l.ReconfigureRouter(context.Background(), kind, opts); err != nil {
		t.Fatal(err)
	}
}
