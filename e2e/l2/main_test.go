// Package l2 holds the end-to-end tests of Herald's L2 mode, in the lab
// (e2e/lab): Herald installed by e2e/deploy, its controller Deployment and
// speaker DaemonSet running as Pods on the lab's nodes, backends as
// Deployments of real pods, and ARP/NDP probes and traffic from the
// client namespace on the nodes' segment.
package l2

import (
	"testing"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
)

func TestMain(m *testing.M) { lab.Main(m, lab.Options{Nodes: 3}) }

const testNS = "l2"

// suite is Herald in the package's lab, and poolL2 the pool its
// Services ask for unless a test picks another.
var suite = &harness.Suite{Namespace: testNS, BaseConfig: baseConfig}

const poolL2 = "l2"

// baseConfig: the main pool with an L2Advertisement for every node, and
// small pools to test advertisement selectors (all inside the L2 segment).
const baseConfig = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: l2}
spec:
  addresses: [198.51.100.64/28, "2001:db8:1::64-2001:db8:1::7f"]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: l2}
spec:
  ipAddressPools: [l2]
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: l2-node2}
spec:
  addresses: [198.51.100.80/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: l2-node2}
spec:
  ipAddressPools: [l2-node2]
  nodeSelectors: [{matchLabels: {kubernetes.io/hostname: node2}}]
  interfaces: [eth0]
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: l2-badif}
spec:
  addresses: [198.51.100.84/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: l2-badif}
spec:
  ipAddressPools: [l2-badif]
  interfaces: [nosuch0]
---
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: dark}
spec:
  addresses: [198.51.100.88/30]
  autoAssign: false
`
