package announce

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// mixedState has an L2 pool and an aggregating BGP pool: taken for the
// BGP pool's, an L2 address would be advertised as its own /27, the
// whole L2 pool.
func mixedState(t *testing.T, svcs ...Service) State {
	return State{
		Config: cfg(t, config.Input{
			Pools: []*v1beta1.IPAddressPool{
				pool("l2-pool", "198.51.100.64/27", "2001:db8:1::/120"),
				pool("bgp-pool", "198.51.100.128/27", "2001:db8:2::/120"),
			},
			L2Advertisements: []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"l2-pool"} })},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("bgp", func(s *v1beta1.BGPAdvertisementSpec) {
				s.IPAddressPools = []string{"bgp-pool"}
				s.AggregationLength = ptr(int32(27))
				s.AggregationLengthV6 = ptr(int32(120))
			})},
			Peers: []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)},
		}),
		Nodes:    nodes("node1", "node2"),
		Services: svcs,
	}
}

func TestPoolAnnotationDecidesNothingForAnAddressInAPool(t *testing.T) {
	for _, lie := range []string{"bgp-pool", "no-such-pool", ""} {
		liar := svc("ns/liar", "198.51.100.70", "2001:db8:1::7")
		liar.Pool = lie
		st := mixedState(t, liar)
		for _, n := range []string{"node1", "node2"} {
			if r := BGP(st, n); len(r.Routes) != 0 {
				t.Errorf("annotation %q: %s advertises %v for an L2 address", lie, n, routes(r))
			}
		}
		o := owners(L2(st))
		if o["198.51.100.70"] == "" || o["2001:db8:1::7"] == "" {
			t.Errorf("annotation %q: L2 owners %v, want both addresses answered", lie, o)
		}
		if s := StatusOf(st, "ns/liar"); !s.Announced || len(s.BGPNodes) != 0 || len(s.L2) != 2 {
			t.Errorf("annotation %q: status %+v", lie, s)
		}
	}
}

func TestPoolAnnotationNeverWidensAnAggregate(t *testing.T) {
	honest := svc("ns/bgp", "198.51.100.130")
	honest.Pool = "bgp-pool"
	liar := svc("ns/liar", "198.51.100.70")
	liar.Pool = "bgp-pool"
	r := BGP(mixedState(t, honest, liar), "node1")
	got := routes(r)
	if len(got) != 1 || len(got["198.51.100.128/27"]) != 1 {
		t.Fatalf("routes %v, want the BGP pool's aggregate only", got)
	}
	for _, rt := range r.Routes {
		for _, s := range rt.Services {
			if s == "ns/liar" {
				t.Errorf("aggregate %s carries the L2 Service", rt.Prefix)
			}
		}
	}
}

func TestPoolOfEachAddressOfADualStackService(t *testing.T) {
	// one family from each pool (an operator's restore or a changed
	// configuration): each address gets its own pool's advertisements
	s := svc("ns/dual", "198.51.100.70", "2001:db8:2::9")
	s.Pool = "l2-pool"
	st := mixedState(t, s)
	if got := routes(BGP(st, "node1")); len(got) != 1 || got["2001:db8:2::/120"] == nil {
		t.Errorf("routes %v, want the IPv6 address's aggregate only", got)
	}
	if o := owners(L2(st)); len(o) != 1 || o["198.51.100.70"] == "" {
		t.Errorf("L2 owners %v, want the IPv4 address only", o)
	}
}

func TestServiceFromKeepsTheRecordOnly(t *testing.T) {
	k8sSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a",
		Annotations: map[string]string{v1beta1.AnnotationAllocatedFromPool: "bgp-pool"}}}
	k8sSvc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.70"}}
	st := mixedState(t, ServiceFrom(k8sSvc, nil))
	st.Services[0].Endpoints.AnyReady = true
	if r := BGP(st, "node1"); len(r.Routes) != 0 {
		t.Errorf("a Service converted with a lying annotation is advertised: %v", routes(r))
	}
}
