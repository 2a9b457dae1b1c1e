package announce

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

func l2State(t *testing.T, ads []*v1beta1.L2Advertisement, ns []*corev1.Node, svcs ...Service) State {
	return State{
		Config:   cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27", "2001:db8:1::64-2001:db8:1::7f"), pool("other", "198.51.100.128/27")}, L2Advertisements: ads}),
		Nodes:    ns,
		Services: svcs,
	}
}

func TestL2OneOwnerPerAddressAndNoAdvertisement(t *testing.T) {
	st := l2State(t, []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"l2"} })},
		nodes("node1", "node2", "node3"),
		svc("ns/a", "198.51.100.64", "2001:db8:1::64"), svc("ns/b", "198.51.100.130"))
	r := L2(st)
	o := owners(r)
	if len(o) != 2 || o["198.51.100.64"] == "" || o["2001:db8:1::64"] == "" {
		t.Fatalf("owners %v", o)
	}
	if !reflect.DeepEqual(r.Uncovered, []netip.Addr{netip.MustParseAddr("198.51.100.130")}) {
		t.Errorf("uncovered %v", r.Uncovered)
	}
	for _, ow := range r.Owners {
		if len(ow.Interfaces) != 0 || !reflect.DeepEqual(ow.Services, []string{"ns/a"}) {
			t.Errorf("owner %+v", ow)
		}
	}
}

func TestL2EligibilityMovesTheAddress(t *testing.T) {
	ad := []*v1beta1.L2Advertisement{l2ad("all", nil)}
	ns := nodes("node1", "node2", "node3")
	st := l2State(t, ad, ns, svc("ns/a", "198.51.100.70"))
	first := owners(L2(st))["198.51.100.70"]
	mutations := map[string]func(*corev1.Node){
		"exclusion label": func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "" },
		"autoscaler taint": func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: TaintToBeDeletedByClusterAutoscaler, Effect: corev1.TaintEffectNoSchedule}}
		},
		"deleting": func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} },
		"network unavailable": func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue})
		},
	}
	for name, m := range mutations {
		ns := nodes("node1", "node2", "node3")
		for _, n := range ns {
			if n.Name == first {
				m(n)
			}
		}
		st.Nodes = ns
		if got := owners(L2(st))["198.51.100.70"]; got == "" || got == first {
			t.Errorf("%s on the owner %s: owner now %q", name, first, got)
		}
	}
	// exclude-from-external-load-balancers: "false" does not exclude, and
	// a NotReady owner whose speaker is alive keeps the address (KEP-3458)
	ns = nodes("node1", "node2", "node3")
	for _, n := range ns {
		n.Labels[corev1.LabelNodeExcludeBalancers] = "false"
		if n.Name == first {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}
	}
	st.Nodes = ns
	if got := owners(L2(st))["198.51.100.70"]; got != first {
		t.Errorf(`label "false" or NotReady moved the address to %q`, got)
	}
	// every node excluded: nobody, and the reason
	for _, n := range ns {
		n.Labels[corev1.LabelNodeExcludeBalancers] = "true"
	}
	r := L2(st)
	if len(r.Owners) != 0 || r.Unowned[netip.MustParseAddr("198.51.100.70")] != ReasonNoEligibleNode {
		t.Errorf("all excluded: %+v", r)
	}
}

func TestL2LiveMembersOnly(t *testing.T) {
	st := l2State(t, []*v1beta1.L2Advertisement{l2ad("all", nil)}, nodes("node1", "node2", "node3"), svc("ns/a", "198.51.100.70"))
	first := owners(L2(st))["198.51.100.70"]
	st.Live = func(n string) bool { return n != first }
	if got := owners(L2(st))["198.51.100.70"]; got == first || got == "" {
		t.Errorf("dead owner kept the address: %q", got)
	}
	st.Live = func(string) bool { return false }
	if len(L2(st).Owners) != 0 {
		t.Error("no live node, yet an owner")
	}
}

func TestL2LocalTrafficPolicyFollowsEndpoints(t *testing.T) {
	ad := []*v1beta1.L2Advertisement{l2ad("all", nil)}
	ns := nodes("node1", "node2", "node3")
	for _, where := range []string{"node1", "node2", "node3"} {
		st := l2State(t, ad, ns, local(svc("ns/a", "198.51.100.70"), where))
		if got := owners(L2(st))["198.51.100.70"]; got != where {
			t.Errorf("endpoints on %s: owner %s", where, got)
		}
	}
	st := l2State(t, ad, ns, local(svc("ns/a", "198.51.100.70")))
	if len(L2(st).Owners) != 0 {
		t.Error("ETP Local without endpoints is announced")
	}
}

func TestL2SharedAddressOneNodePreferringAllLocal(t *testing.T) {
	ad := []*v1beta1.L2Advertisement{l2ad("all", nil)}
	ns := nodes("node1", "node2", "node3")
	a := local(svc("ns/a", "198.51.100.70"), "node1", "node3")
	b := local(svc("ns/b", "198.51.100.70"), "node2", "node3")
	r := L2(l2State(t, ad, ns, a, b))
	if len(r.Owners) != 1 || r.Owners[0].Node != "node3" || !reflect.DeepEqual(r.Owners[0].Services, []string{"ns/a", "ns/b"}) {
		t.Errorf("shared address: %+v", r.Owners)
	}
	// no node has both: one of the nodes with some local endpoint
	b = local(svc("ns/b", "198.51.100.70"), "node2")
	a = local(svc("ns/a", "198.51.100.70"), "node1")
	o := owners(L2(l2State(t, ad, ns, a, b)))["198.51.100.70"]
	if o != "node1" && o != "node2" {
		t.Errorf("owner %s has no local endpoint", o)
	}
	// a Cluster-policy sharer does not restrict
	c := svc("ns/c", "198.51.100.70")
	if o := owners(L2(l2State(t, ad, ns, a, c)))["198.51.100.70"]; o != "node1" {
		t.Errorf("owner %s, want node1 (the only node with the Local Service's endpoint)", o)
	}
}

func TestL2AdvertisementSelectors(t *testing.T) {
	ns := nodes("node1", "node2", "node3")
	ns[1].Labels["edge"] = "true"
	ads := []*v1beta1.L2Advertisement{
		l2ad("edge-only", func(s *v1beta1.L2AdvertisementSpec) {
			s.IPAddressPools = []string{"l2"}
			s.NodeSelectors = []metav1.LabelSelector{sel("edge", "true")}
			s.ServiceSelectors = []metav1.LabelSelector{sel("tier", "front")}
			s.Interfaces = []string{"eth1", "eth0"}
		}),
		l2ad("by-pool-label", func(s *v1beta1.L2AdvertisementSpec) {
			s.IPAddressPoolSelectors = []metav1.LabelSelector{sel("team", "b")}
		}),
	}
	st := l2State(t, ads, ns)
	other := pool("other", "198.51.100.128/27")
	other.Labels = map[string]string{"team": "b"}
	st.Config = cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27"), other}, L2Advertisements: ads})
	front := svc("ns/front", "198.51.100.70")
	front.Labels = labels.Set{"tier": "front"}
	back := svc("ns/back", "198.51.100.71")
	byPoolLabel := svc("ns/other", "198.51.100.130")
	st.Services = []Service{front, back, byPoolLabel}
	r := L2(st)
	o := owners(r)
	if o["198.51.100.70"] != "node2" {
		t.Errorf("node selector: owner %q", o["198.51.100.70"])
	}
	if r.Owners[0].IP.String() == "198.51.100.70" && !reflect.DeepEqual(r.Owners[0].Interfaces, []string{"eth0", "eth1"}) {
		t.Errorf("interfaces %v", r.Owners[0].Interfaces)
	}
	if _, ok := o["198.51.100.71"]; ok {
		t.Error("service selector not honoured")
	}
	if o["198.51.100.130"] == "" {
		t.Error("pool selected by label not announced")
	}
}

func TestL2PoolFromAnnotationKeepsOutsideAddressAnnounced(t *testing.T) {
	st := l2State(t, []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"l2"} })},
		nodes("node1"), svc("ns/a", "198.51.100.200"))
	// the pool shrank; the Service keeps the address, and the pool's
	// status was never written (no record): the annotation still counts
	st.Services[0].Pool = "l2"
	if owners(L2(st))["198.51.100.200"] != "node1" {
		t.Error("an address outside its pool's current ranges is no longer announced")
	}
}
