package bgp

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestRoutesECMPAndDataPath: a dual-stack Service's /32 and /128 reach
// FRR's RIB from every node and its kernel FIB with one next hop per node
// (ECMP). The /128 rides on the IPv4 sessions (MP-BGP) with the node's
// global IPv6 address as next hop; with a second BGPPeer on the router's
// IPv6 address, both prefixes also arrive over the IPv6 sessions. An HTTP
// request from the external client behind the router reaches the pod
// through the VIP, and the Service says which nodes advertise it.
func TestRoutesECMPAndDataPath(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	all := allNodes(l)
	_, ips := suite.Service(t, "web", poolMain, dualStack, "node2")
	v4, v6 := ips[0], ips[1]

	r4 := waitFIB(t, l, host(v4), all...)
	checkPaths(t, r4, nodeAddrs(l, false), func(n lab.Node) netip.Addr { return n.IPv4 })
	r6 := waitFIB(t, l, host(v6), all...)
	checkPaths(t, r6, nodeAddrs(l, false), func(n lab.Node) netip.Addr { return n.IPv6 })
	t.Logf("%s via %v, %s via %v (FIB next hops %v)", host(v4), r4.FIBNodes(), host(v6), r6.FIBNodes(), r6.FIB)

	for _, vip := range ips {
		var answer lab.PodAnswer
		labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+vip.String(), func() bool {
			var err error
			answer, err = l.HTTPGet(ctx, lab.External, vip, 80)
			return err == nil
		})
		if answer.Node != "node2" {
			t.Errorf("%s answered by %s on %q, want a pod on node2", vip, answer.Pod, answer.Node)
		}
		t.Logf("http://%s answered by %s, which saw the client as %s", netip.AddrPortFrom(vip, 80), answer.Pod, answer.Client)
	}

	// advertised only over BGP: the condition names the BGP nodes
	c := waitServiceCondition(t, l, "web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "advertised over BGP by node1, node2, node3")
	t.Logf("Announced: %s: %s", c.Reason, c.Message)
	for _, n := range all {
		waitEvent(t, l, "Service", "web", "BGPAdvertised", "node "+n+" advertises", host(v4).String(), host(v6).String())
	}

	// the IPv6 session carries both families as well
	// a second BGPPeer: the router's IPv6 address, from every node (both
	// families ride on it too)
	apply(t, h, peerYAML(peerV6, "peerAddress: "+strconv.Quote(lab.RouterIPv6)), "bgppeer/"+peerV6)
	waitSessions(t, l, 60*time.Second, append(nodeAddrs(l, false), nodeAddrs(l, true)...)...)
	both := append(nodeAddrs(l, false), nodeAddrs(l, true)...)
	labkit.Eventually(t, 30*time.Second, "paths over both sessions of every node", func() bool {
		r4, r6 = route(t, l, host(v4)), route(t, l, host(v6))
		return len(r4.Paths) == 6 && len(r6.Paths) == 6
	})
	checkPaths(t, r4, both, func(n lab.Node) netip.Addr { return n.IPv4 })
	checkPaths(t, r6, both, func(n lab.Node) netip.Addr { return n.IPv6 })
	if got := sortedNodes(r6); !slices.Equal(got, all) {
		t.Errorf("FIB for %s via %v, want %v", v6, got, all)
	}
	if got := sortedNodes(r4); !slices.Equal(got, all) {
		t.Errorf("FIB for %s via %v, want %v", v4, got, all)
	}
}

// checkPaths checks a route's BGP paths: one from each of peers, each with
// AS path [64513] and the next hop nextHop(node of the peer).
func checkPaths(t *testing.T, r lab.Route, peers []netip.Addr, nextHop func(lab.Node) netip.Addr) {
	t.Helper()
	slices.SortFunc(peers, func(a, b netip.Addr) int { return a.Compare(b) })
	if got := pathPeers(r); !slices.Equal(got, peers) {
		t.Fatalf("%s learned from %v, want %v", r.Prefix, got, peers)
	}
	l := lab.Shared(t)
	for _, p := range r.Paths {
		n, ok := nodeOfPeer(l, p.Peer)
		if !ok {
			t.Fatalf("%s learned from %s, which is no node", r.Prefix, p.Peer)
		}
		if want := nextHop(n); !slices.Contains(p.NextHops, want) {
			t.Errorf("%s from %s: next hops %v, want %s", r.Prefix, p.Peer, p.NextHops, want)
		}
		if !slices.Equal(p.ASPath, []uint32{lab.NodeASN}) {
			t.Errorf("%s from %s: AS path %v", r.Prefix, p.Peer, p.ASPath)
		}
	}
}

func nodeOfPeer(l *lab.Lab, a netip.Addr) (lab.Node, bool) {
	for _, n := range l.Nodes() {
		if n.IPv4 == a || n.IPv6 == a {
			return n, true
		}
	}
	return lab.Node{}, false
}
