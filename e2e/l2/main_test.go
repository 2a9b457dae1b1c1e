// Package l2 holds the end-to-end tests of Herald's L2 mode, in the lab
// (e2e/lab): Herald installed by e2e/deploy, its controller Deployment and
// speaker DaemonSet running as Pods on the lab's nodes, backends as
// Deployments of real pods, and ARP/NDP probes and traffic from the
// client namespace on the nodes' segment.
package l2

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
)

func TestMain(m *testing.M) { lab.Main(m, lab.Options{Nodes: 3}) }

const testNS = "l2"

var shared struct {
	once   sync.Once
	images deploy.Images
	h      *deploy.Herald
	err    error
}

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

// herald returns Herald running in the package's lab (started once), with
// every speaker running and every link up.
func herald(t testing.TB) (*lab.Lab, *deploy.Herald) {
	t.Helper()
	l := lab.Shared(t)
	ctx := context.Background()
	shared.once.Do(func() { shared.h, shared.err = deploy.Start(ctx, l, &shared.images, baseConfig) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	h := shared.h
	h.LogsOnFailure(t)
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	return l, h
}

// service creates a LoadBalancer Service from pool l2 with pods on nodes,
// waits for its addresses and returns them.
func service(t testing.TB, l *lab.Lab, name string, mutate func(*corev1.Service), nodes ...string) (*corev1.Service, []netip.Addr) {
	t.Helper()
	ctx := context.Background()
	svc := lab.LoadBalancerService(testNS, name)
	svc.Annotations = map[string]string{"herald.dev/address-pool": "l2"}
	if mutate != nil {
		mutate(svc)
	}
	t.Cleanup(func() { _ = l.DeleteService(context.Background(), testNS, name) })
	created, ips, err := shared.h.CreateService(ctx, svc, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return created, ips
}

// owner waits until exactly one node answers for vip and returns it.
func owner(t testing.TB, l *lab.Lab, vip netip.Addr) string {
	t.Helper()
	var node string
	lab.Poll(t, fmt.Sprintf("exactly one node answering for %s", vip), 30*time.Second, func() bool {
		answers := probe(t, l, vip)
		if len(answers) == 1 {
			node = answers[0].Node
		}
		return len(answers) == 1
	})
	return node
}

// probe sends one ARP who-has (IPv4) or multicast NS (IPv6) from the
// client and returns the answers.
func probe(t testing.TB, l *lab.Lab, vip netip.Addr) []lab.Answer {
	t.Helper()
	var answers []lab.Answer
	var err error
	if vip.Is4() {
		answers, err = l.ARPProbe(context.Background(), vip)
	} else {
		answers, err = l.NDPProbe(context.Background(), vip, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// nobody waits until no node answers for vip.
func nobody(t testing.TB, l *lab.Lab, vip netip.Addr) {
	t.Helper()
	lab.Poll(t, fmt.Sprintf("nobody answering for %s", vip), 30*time.Second, func() bool { return len(probe(t, l, vip)) == 0 })
}
