package announce

import (
	"strings"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

func TestStatuses(t *testing.T) {
	in := config.Input{
		Pools:            []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27"), pool("bgp", "198.51.100.128/27"), pool("none", "198.51.100.192/27")},
		L2Advertisements: []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"l2"} })},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("bgp", func(s *v1beta1.BGPAdvertisementSpec) {
			s.IPAddressPools = []string{"bgp"}
		})},
		Peers: []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)},
	}
	st := State{Config: cfg(t, in), Nodes: nodes("node1", "node2"), Services: []Service{
		svc("ns/l2", "198.51.100.70"), svc("ns/bgp", "198.51.100.130"), svc("ns/none", "198.51.100.200"),
		svc("ns/pending"), local(svc("ns/local-no-endpoints", "198.51.100.71")),
	}}
	got := Statuses(st)
	check := func(key string, announced bool, reason string, fragments ...string) {
		t.Helper()
		s := got[key]
		if s.Announced != announced || s.Reason != reason {
			t.Errorf("%s: %+v", key, s)
		}
		for _, f := range fragments {
			if !strings.Contains(s.Message, f) {
				t.Errorf("%s: message %q lacks %q", key, s.Message, f)
			}
		}
	}
	check("ns/l2", true, ReasonAnnounced, "198.51.100.70 answered by node")
	for key, want := range got {
		if one := StatusOf(st, key); one.Reason != want.Reason || one.Message != want.Message {
			t.Errorf("StatusOf(%s) = %+v, Statuses gives %+v", key, one, want)
		}
	}
	check("ns/bgp", true, ReasonAnnounced, "BGP by node1, node2")
	check("ns/none", false, ReasonNoAdvertisement, "no L2Advertisement selects", "no BGPAdvertisement does")
	check("ns/pending", false, ReasonNoAddress)
	check("ns/local-no-endpoints", false, ReasonNoReadyEndpoint, "no ready endpoint")
	noEndpoints := svc("ns/bgp-no-endpoints", "198.51.100.131")
	noEndpoints.Endpoints.AnyReady = false
	st.Services = append(st.Services, noEndpoints)
	got = Statuses(st)
	check("ns/bgp-no-endpoints", false, ReasonNoReadyEndpoint, "as soon as a pod is ready")
	for _, n := range st.Nodes {
		n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
	}
	got = Statuses(st)
	check("ns/l2", false, ReasonNoEligibleNode)
	check("ns/bgp", false, ReasonNoEligibleNode)
}
