package bgp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// TestBIRD: with BIRD 2 as the router the speakers' sessions come up
// through its listen range, and a dual-stack Service's /32 and /128 are
// received from every node and installed with one next hop per node.
func TestBIRD(t *testing.T) {
	l, _ := suite.Herald(t)
	reconfigureRouter(t, l, lab.BIRD, lab.BGPOptions{})
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	for a, p := range neighbors(t, l) {
		if p.Up() && (!p.Dynamic || p.ASN != lab.NodeASN) {
			t.Errorf("BIRD session with %s: %+v, want a dynamic neighbor of AS %d", a, p, lab.NodeASN)
		}
	}
	// a prefix BIRD does not have reads as no route, not as an error
	// (birdc exits 1 on "Network not found")
	if r := route(t, l, netip.MustParsePrefix("198.51.100.99/32")); len(r.Paths) != 0 || len(r.FIB) != 0 {
		t.Errorf("BIRD has a route for an unused address: %+v", r)
	}
	all := allNodes(l)
	_, ips := suite.Service(t, "bird", poolMain, dualStack, all...)
	r4 := waitFIB(t, l, host(ips[0]), all...)
	checkPaths(t, r4, nodeAddrs(l, false), func(n lab.Node) netip.Addr { return n.IPv4 })
	r6 := waitFIB(t, l, host(ips[1]), all...)
	checkPaths(t, r6, nodeAddrs(l, false), func(n lab.Node) netip.Addr { return n.IPv6 })
	t.Logf("BIRD: %s via %v, %s via %v", r4.Prefix, r4.FIBNodes(), r6.Prefix, r6.FIBNodes())
}
