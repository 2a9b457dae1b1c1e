package announce

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

func bgpState(t *testing.T, ads []*v1beta1.BGPAdvertisement, peers []*v1beta1.BGPPeer, svcs ...Service) State {
	return State{
		Config: cfg(t, config.Input{
			Pools:             []*v1beta1.IPAddressPool{pool("bgp", "198.51.100.128/27", "2001:db8:ff::/120")},
			BGPAdvertisements: ads, Peers: peers,
			Communities: []*v1beta1.Community{{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1beta1.CommunitySpec{Communities: []v1beta1.CommunityAlias{{Name: "no-export", Value: "65535:65281"}}}}},
		}),
		Nodes:    nodes("node1", "node2", "node3"),
		Services: svcs,
	}
}

func routes(r BGPResult) map[string][]string {
	out := map[string][]string{}
	for _, rt := range r.Routes {
		out[rt.Prefix.String()] = append(out[rt.Prefix.String()], rt.Peers...)
	}
	return out
}

func TestBGPEveryEligibleNodeAdvertises(t *testing.T) {
	st := bgpState(t, []*v1beta1.BGPAdvertisement{bgpad("all", nil)}, []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)},
		svc("ns/a", "198.51.100.130", "2001:db8:ff::10"))
	for _, n := range []string{"node1", "node2", "node3"} {
		r := BGP(st, n)
		want := map[string][]string{"198.51.100.130/32": {"tor"}, "2001:db8:ff::10/128": {"tor"}}
		if !reflect.DeepEqual(routes(r), want) || len(r.Peers) != 1 {
			t.Errorf("%s: %v", n, routes(r))
		}
	}
	st.Nodes[1].Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true"
	r := BGP(st, "node2")
	if len(r.Routes) != 0 || len(r.Peers) != 1 {
		t.Errorf("excluded node: routes %v, peers %d (sessions stay up, routes go)", routes(r), len(r.Peers))
	}
	// no ready endpoint: nothing to advertise
	st.Services[0].Endpoints.AnyReady = false
	if len(BGP(st, "node1").Routes) != 0 {
		t.Error("a Service without endpoints is advertised")
	}
}

func TestBGPLocalPolicyOnlyFromNodesWithEndpoints(t *testing.T) {
	st := bgpState(t, []*v1beta1.BGPAdvertisement{bgpad("all", nil)}, []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)},
		local(svc("ns/a", "198.51.100.130"), "node2", "node3"))
	for n, want := range map[string]int{"node1": 0, "node2": 1, "node3": 1} {
		if got := len(BGP(st, n).Routes); got != want {
			t.Errorf("%s advertises %d routes, want %d", n, got, want)
		}
	}
}

func TestBGPAttributesPeersAndAggregation(t *testing.T) {
	peers := []*v1beta1.BGPPeer{
		peer("tor-a", "198.51.100.1", 64512, nil),
		peer("tor-b", "198.51.100.2", 64513, nil), // iBGP
		peer("rack2-only", "198.51.100.3", 64512, func(s *v1beta1.BGPPeerSpec) { s.NodeSelectors = []metav1.LabelSelector{sel("rack", "2")} }),
	}
	ads := []*v1beta1.BGPAdvertisement{
		bgpad("base", func(s *v1beta1.BGPAdvertisementSpec) { s.Communities = []string{"64512:1", "no-export"} }),
		bgpad("extra-to-b", func(s *v1beta1.BGPAdvertisementSpec) {
			s.Peers = []string{"tor-b"}
			s.Communities = []string{"64512:2", "large:1:2:3"}
			s.LocalPref = ptr(int64(200))
		}),
		bgpad("aggregate", func(s *v1beta1.BGPAdvertisementSpec) {
			s.Peers = []string{"tor-a"}
			s.AggregationLength = ptr(int32(28))
			s.ServiceSelectors = []metav1.LabelSelector{sel("agg", "yes")}
		}),
	}
	a := svc("ns/a", "198.51.100.130")
	b := svc("ns/b", "198.51.100.131")
	b.Labels = map[string]string{"agg": "yes"}
	c := svc("ns/c", "198.51.100.132")
	c.Labels = map[string]string{"agg": "yes"}
	st := bgpState(t, ads, peers, a, b, c)
	r := BGP(st, "node1")
	if len(r.Peers) != 2 {
		t.Errorf("node1 peers %d, want 2 (rack2-only selects other nodes)", len(r.Peers))
	}
	byKey := map[string]Route{}
	for _, rt := range r.Routes {
		for _, p := range rt.Peers {
			byKey[rt.Prefix.String()+"|"+p] = rt
		}
	}
	noExport := uint32(65535<<16 | 65281)
	want := byKey["198.51.100.130/32|tor-b"]
	if !reflect.DeepEqual(want.Communities, []uint32{64512<<16 | 1, 64512<<16 | 2, noExport}) || want.LocalPref == nil || *want.LocalPref != 200 ||
		!reflect.DeepEqual(want.LargeCommunities, [][3]uint32{{1, 2, 3}}) {
		t.Errorf("merged attributes toward tor-b: %+v", want)
	}
	if got := byKey["198.51.100.130/32|tor-a"]; !reflect.DeepEqual(got.Communities, []uint32{64512<<16 | 1, noExport}) || got.LocalPref != nil {
		t.Errorf("attributes toward tor-a: %+v", got)
	}
	agg := byKey["198.51.100.128/28|tor-a"]
	if !reflect.DeepEqual(agg.Services, []string{"ns/b", "ns/c"}) {
		t.Errorf("aggregate carries %v", agg.Services)
	}
	if _, ok := byKey["198.51.100.128/28|tor-b"]; ok {
		t.Error("aggregate sent to a peer its advertisement does not name")
	}
	st.Nodes[0].Labels["rack"] = "2"
	if len(BGP(st, "node1").Peers) != 3 {
		t.Error("BGPPeer node selector not honoured")
	}
}

func TestBGPNodeSelectorOnAdvertisement(t *testing.T) {
	ads := []*v1beta1.BGPAdvertisement{bgpad("rack1", func(s *v1beta1.BGPAdvertisementSpec) {
		s.NodeSelectors = []metav1.LabelSelector{sel("kubernetes.io/hostname", "node1")}
	})}
	st := bgpState(t, ads, []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)}, svc("ns/a", "198.51.100.130"))
	if len(BGP(st, "node1").Routes) != 1 || len(BGP(st, "node2").Routes) != 0 {
		t.Error("advertisement node selector not honoured")
	}
	if len(BGP(st, "node-unknown").Peers) != 0 {
		t.Error("unknown node gets peers")
	}
}

// Weights: a Local-policy Service's route carries the node's ready local
// endpoints when an advertisement asks for link bandwidth, summed over
// the Services sharing the prefix; Cluster-policy Services and
// advertisements without it carry none.
func TestBGPLinkBandwidthWeights(t *testing.T) {
	weighted := bgpad("weighted", func(s *v1beta1.BGPAdvertisementSpec) {
		s.LinkBandwidth = v1beta1.LinkBandwidthReadyLocalEndpoints
	})
	counted := func(s Service, counts map[string]int) Service {
		s.Endpoints.LocalReady = counts
		return s
	}
	counts := map[string]int{"node1": 1, "node2": 2, "node3": 3}
	weightOn := func(st State, node, prefix string) (uint32, bool) {
		for _, r := range BGP(st, node).Routes {
			if r.Prefix.String() == prefix {
				return r.Weight, true
			}
		}
		return 0, false
	}
	tor := []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)}

	st := bgpState(t, []*v1beta1.BGPAdvertisement{weighted}, tor,
		counted(local(svc("ns/a", "198.51.100.130"), "node1", "node2", "node3"), counts))
	for n, want := range map[string]uint32{"node1": 1, "node2": 2, "node3": 3} {
		if got, ok := weightOn(st, n, "198.51.100.130/32"); !ok || got != want {
			t.Errorf("%s: weight %d (advertised %v), want %d", n, got, ok, want)
		}
	}

	st = bgpState(t, []*v1beta1.BGPAdvertisement{bgpad("plain", nil)}, tor,
		counted(local(svc("ns/a", "198.51.100.130"), "node1", "node2", "node3"), counts))
	if got, ok := weightOn(st, "node3", "198.51.100.130/32"); !ok || got != 0 {
		t.Errorf("linkBandwidth Off: weight %d (advertised %v), want 0", got, ok)
	}

	cluster := svc("ns/c", "198.51.100.131")
	cluster.Endpoints.LocalReady = counts
	st = bgpState(t, []*v1beta1.BGPAdvertisement{weighted}, tor, cluster)
	if got, ok := weightOn(st, "node3", "198.51.100.131/32"); !ok || got != 0 {
		t.Errorf("Cluster policy: weight %d (advertised %v), want 0", got, ok)
	}

	// Two Local Services sharing an address, covered twice (two weighted
	// advertisements): each Service counts once.
	twice := bgpad("twice", func(s *v1beta1.BGPAdvertisementSpec) {
		s.LinkBandwidth = v1beta1.LinkBandwidthReadyLocalEndpoints
		s.Communities = []string{"64512:9"}
	})
	st = bgpState(t, []*v1beta1.BGPAdvertisement{weighted, twice}, tor,
		counted(local(svc("ns/a", "198.51.100.132"), "node2"), map[string]int{"node2": 2}),
		counted(local(svc("ns/b", "198.51.100.132"), "node2"), map[string]int{"node2": 5}))
	if got, ok := weightOn(st, "node2", "198.51.100.132/32"); !ok || got != 7 {
		t.Errorf("shared address: weight %d (advertised %v), want 7", got, ok)
	}
}
