package bgp

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/e2e/lab"
)

// TestAddressFamilies: spec.addressFamilies decides what the session
// carries on the wire. A dual-stack Service's /32 and /128 both reach FRR
// over the nodes' IPv4 sessions by default (MP-BGP); with addressFamilies
// [IPv4] the /128 is withdrawn and the /32 stays; with [IPv6] the /32 is
// withdrawn and the /128 comes back.
func TestAddressFamilies(t *testing.T) {
	l, h := suite.Herald(t)
	all := allNodes(l)
	_, ips := suite.Service(t, "families", poolMain, dualStack, all...)
	v4, v6 := host(ips[0]), host(ips[1])
	waitFIB(t, l, v4, all...)
	waitFIB(t, l, v6, all...)
	peer := func(families string) string {
		return fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: %s
  holdTime: 9s
  keepaliveTime: 3s
  connectTime: 2s
  addressFamilies: %s
`, lab.NodeASN, lab.RouterASN, lab.RouterIPv4, families)
	}
	apply(t, h, peer("[IPv4]"))
	waitFIB(t, l, v6)
	r := waitFIB(t, l, v4, all...)
	t.Logf("addressFamilies [IPv4]: %s via %v, %s withdrawn", v4, r.FIBNodes(), v6)
	apply(t, h, peer("[IPv6]"))
	waitFIB(t, l, v4)
	r = waitFIB(t, l, v6, all...)
	checkPaths(t, r, nodeAddrs(l, false), func(n lab.Node) netip.Addr { return n.IPv6 })
	t.Logf("addressFamilies [IPv6]: %s via %v over the IPv4 sessions, %s withdrawn", v6, r.FIBNodes(), v4)
}
