package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestCommunities: standard, large and aliased (standard and large)
// communities reach the router on both prefixes of a dual-stack Service.
func TestCommunities(t *testing.T) {
	l, h := suite.Herald(t)
	apply(t, h, `
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: attrs-communities}
spec:
  ipAddressPools: [attrs]
  communities: ["64512:100", "large:64512:1:2", no-export, edge]
`, "bgpadvertisement/attrs-communities")
	all := allNodes(l)
	_, ips := suite.Service(t, "communities", poolAttrs, dualStack, all...)
	for _, ip := range ips {
		r := waitFIB(t, l, host(ip), all...)
		for _, p := range r.Paths {
			// FRR names the well-known 65535:65281 noExport
			if !slices.Equal(p.Communities, []string{"64512:100", "noExport"}) {
				t.Errorf("%s from %s: communities %v, want 64512:100 and no-export", r.Prefix, p.Peer, p.Communities)
			}
			if !slices.Equal(p.LargeCommunities, []string{"64512:1:2", "64512:7:7"}) {
				t.Errorf("%s from %s: large communities %v, want 64512:1:2 and 64512:7:7", r.Prefix, p.Peer, p.LargeCommunities)
			}
		}
		t.Logf("%s: communities %v, large %v", r.Prefix, r.Paths[0].Communities, r.Paths[0].LargeCommunities)
	}
}

// TestLocalPrefOverIBGP: on an iBGP session (router and nodes in AS
// 64512) the advertisement's localPref reaches the router.
func TestLocalPrefOverIBGP(t *testing.T) {
	l, h := suite.Herald(t)
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{ASN: lab.RouterASN, NodeASN: lab.RouterASN})
	// the BGPPeer leaves ebgpMultiHop out, as an iBGP peer usually does:
	// the CRD rule on it is guarded with has() (api/v1beta1/crd_test.go)
	apply(t, h, peerYAML(peerV4, fmt.Sprintf("myASN: %d", lab.RouterASN))+`---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: attrs-localpref}
spec:
  ipAddressPools: [attrs]
  localPref: 250
`, "bgpadvertisement/attrs-localpref")
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	all := allNodes(l)
	_, ips := suite.Service(t, "localpref", poolAttrs, dualStack, all...)
	for _, ip := range ips {
		r := waitFIB(t, l, host(ip), all...)
		for _, p := range r.Paths {
			if !p.HasLocalPref || p.LocalPref != 250 || len(p.ASPath) != 0 {
				t.Errorf("%s from %s: local-pref %d (set: %v), AS path %v; want 250 over iBGP with an empty AS path",
					r.Prefix, p.Peer, p.LocalPref, p.HasLocalPref, p.ASPath)
			}
		}
	}
}

// TestAggregation: with aggregationLength 28 the pool's addresses are
// advertised as the /28 that holds them, not as /32s, and the aggregate
// stays while any address in it is in use.
func TestAggregation(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	apply(t, h, `
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: agg}
spec:
  ipAddressPools: [agg]
  aggregationLength: 28
`, "bgpadvertisement/agg")
	all := allNodes(l)
	_, a := suite.Service(t, "agg-a", poolAgg, nil, all...)
	agg := netip.MustParsePrefix("198.51.100.144/28")
	waitFIB(t, l, agg, all...)
	_, b := suite.Service(t, "agg-b", poolAgg, nil, all...)
	for _, ip := range append(a, b...) {
		if !agg.Contains(ip) {
			t.Fatalf("%s is not in the pool's /28 %s", ip, agg)
		}
		if r := route(t, l, host(ip)); len(r.Paths) > 0 {
			t.Errorf("host route %s advertised besides the aggregate: %+v", host(ip), r.Paths)
		}
	}
	if err := l.DeleteService(ctx, testNS, "agg-a"); err != nil {
		t.Fatal(err)
	}
	// the controller releases a's address; b's keeps the aggregate up
	labkit.Eventually(t, 30*time.Second, "agg-a gone", func() bool {
		_, err := l.Client().CoreV1().Services(testNS).Get(ctx, "agg-a", metav1.GetOptions{})
		return err != nil
	})
	stableFIB(t, l, agg, all, 2*time.Second)
	if err := l.DeleteService(ctx, testNS, "agg-b"); err != nil {
		t.Fatal(err)
	}
	waitFIB(t, l, agg)
}

// TestPeersAndNodeSelectors: a BGPPeer with nodeSelectors is peered from
// the selected nodes only; an advertisement's peers limits which sessions
// get its routes; an advertisement's nodeSelectors limits which nodes
// advertise them.
func TestPeersAndNodeSelectors(t *testing.T) {
	l, h := suite.Herald(t)
	apply(t, h, peerYAML(peerV6, "peerAddress: "+strconv.Quote(lab.RouterIPv6), `nodeSelectors:
    - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node1, node3]}]`)+`---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: attrs-v6-sessions}
spec:
  ipAddressPools: [attrs]
  peers: [router-v6]
`, "bgppeer/"+peerV6, "bgpadvertisement/attrs-v6-sessions")
	waitSessions(t, l, 60*time.Second, append(nodeAddrs(l, false), nodeAddrs(l, true, "node1", "node3")...)...)
	all := allNodes(l)
	_, ips := suite.Service(t, "selected", poolAttrs, dualStack, all...)
	v6Sessions := nodeAddrs(l, true, "node1", "node3")
	for _, ip := range ips {
		r := waitFIB(t, l, host(ip), "node1", "node3")
		if got := pathPeers(r); !slices.Equal(got, v6Sessions) {
			t.Errorf("%s learned from %v, want only the IPv6 sessions %v", r.Prefix, got, v6Sessions)
		}
	}

	// a second advertisement of the same pool, to the IPv4 sessions, from node2 only
	apply(t, h, `
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: attrs-node2}
spec:
  ipAddressPools: [attrs]
  peers: [router]
  nodeSelectors: [{matchLabels: {kubernetes.io/hostname: node2}}]
  communities: ["64512:2"]
`, "bgpadvertisement/attrs-node2")
	want := append(nodeAddrs(l, false, "node2"), v6Sessions...)
	slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, ip := range ips {
		r := waitFIB(t, l, host(ip), all...)
		if got := pathPeers(r); !slices.Equal(got, want) {
			t.Errorf("%s learned from %v, want %v", r.Prefix, got, want)
		}
		for _, p := range r.Paths {
			node2 := p.Peer == nodeAddrs(l, false, "node2")[0]
			if has := slices.Contains(p.Communities, "64512:2"); has != node2 {
				t.Errorf("%s from %s: communities %v (64512:2 only from node2's IPv4 session)", r.Prefix, p.Peer, p.Communities)
			}
		}
	}
}
