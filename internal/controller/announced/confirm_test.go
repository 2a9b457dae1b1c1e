package announced_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/controller/announced"
)

const (
	v4    = "198.51.100.64"
	v6    = "2001:db8::64"
	lease = "(liveness Lease " + v1beta1.SpeakerLeasePrefix + "<node> expired or missing)"
)

func node(name string, excluded bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if excluded {
		n.Labels[corev1.LabelNodeExcludeBalancers] = ""
	}
	return n
}

// world is the configuration of a case: the announcing mode, the nodes
// (excluded ones marked with a trailing "!") and the Service.
type world struct {
	l2, bgp  bool
	aggr     int32 // the BGPAdvertisement's IPv4 aggregation length (0: /32)
	nodes    []string
	etpLocal bool // with no ready endpoint
	ips      []string
}

func (w world) input(t *testing.T, live []string, reports map[string][]string) announced.Input {
	t.Helper()
	pool := "198.51.100.64/29"
	if w.aggr != 0 {
		pool = "198.51.100.0/24" // an aggregate must not cover addresses outside the pool
	}
	in := config.Input{Pools: []*v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{pool, "2001:db8::64/126"}}}}}
	if w.l2 {
		in.L2Advertisements = []*v1beta1.L2Advertisement{{ObjectMeta: metav1.ObjectMeta{Name: "l2"}}}
	}
	if w.bgp {
		ad := &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "bgp"}}
		if w.aggr != 0 {
			ad.Spec.AggregationLength = &w.aggr
		}
		in.BGPAdvertisements = []*v1beta1.BGPAdvertisement{ad}
		in.Peers = []*v1beta1.BGPPeer{{ObjectMeta: metav1.ObjectMeta{Name: "tor"},
			Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "198.51.100.1"}}}
	}
	cfg, problems := config.Build(in)
	if len(problems) > 0 {
		t.Fatalf("configuration problems: %v", problems)
	}
	var nodes []*corev1.Node
	for _, n := range w.nodes {
		name, excluded := strings.CutSuffix(n, "!")
		nodes = append(nodes, node(name, excluded))
	}
	svc := announce.Service{Key: "ns/web", Endpoints: announce.Endpoints{AnyReady: !w.etpLocal, Local: map[string]bool{}}, ETPLocal: w.etpLocal}
	for _, ip := range w.ips {
		svc.IPs = append(svc.IPs, netip.MustParseAddr(ip))
	}
	return announced.Input{
		State: announce.State{Config: cfg, Nodes: nodes, Services: []announce.Service{svc}},
		Key:   svc.Key, IPs: svc.IPs,
		Live:    func(n string) bool { return slices.Contains(live, n) },
		Reports: reports,
	}
}

var (
	l2One   = world{l2: true, nodes: []string{"n1"}, ips: []string{v4}}
	l2Two   = world{l2: true, nodes: []string{"n1", "n2"}, ips: []string{v4}}
	bgpTwo  = world{bgp: true, nodes: []string{"n1", "n2", "n3!"}, ips: []string{v4}}
	l4      = "l2/" + v4
	bgp4    = "bgp/" + v4 + "/32"
	l2Plain = v4 + " answered by node n1 (L2)"
)

// TestConfirm covers every outcome of Confirm: each reason, each way a
// report confirms or does not, and the nodes each depends on.
func TestConfirm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		world   world
		live    []string
		reports map[string][]string
		status  metav1.ConditionStatus
		reason  string
		message string // exact, or a fragment when fragment is set
		partial bool
		deps    []string
	}{
		{name: "no advertisement", world: world{nodes: []string{"n1"}, ips: []string{v4}}, live: []string{"n1"},
			status: metav1.ConditionFalse, reason: announce.ReasonNoAdvertisement, message: "", partial: true},
		{name: "no ready endpoint", world: world{l2: true, nodes: []string{"n1"}, etpLocal: true, ips: []string{v4}}, live: []string{"n1"},
			status: metav1.ConditionFalse, reason: announce.ReasonNoReadyEndpoint, message: "", partial: true},
		{name: "every node excluded", world: world{l2: true, nodes: []string{"n1!"}, ips: []string{v4}}, live: []string{"n1"},
			status: metav1.ConditionFalse, reason: announce.ReasonNoEligibleNode, message: "", partial: true},
		{name: "the only node's speaker down", world: l2One,
			status: metav1.ConditionFalse, reason: v1beta1.ReasonOwnerSpeakerDown, deps: []string{"n1"},
			message: "no node with a live speaker may announce the Service: n1 may, but has no live speaker (liveness Lease " + v1beta1.SpeakerLeasePrefix + "<node> expired or missing; check the speaker Pods)"},
		{name: "every speaker down, L2 and BGP: BGP's nodes named", world: world{l2: true, bgp: true, nodes: []string{"n1", "n2"}, ips: []string{v4}},
			status: metav1.ConditionFalse, reason: v1beta1.ReasonOwnerSpeakerDown, deps: []string{"n1", "n2"},
			message: "node n1, n2 have no live speaker " + lease + "; no node reports advertising it over BGP yet (expected: n1, n2; check the BGPPeers' sessions)"},
		{name: "L2 owner reports", world: l2One, live: []string{"n1"}, reports: map[string][]string{l4: {"n1"}},
			status: metav1.ConditionTrue, reason: announce.ReasonAnnounced, message: l2Plain, deps: []string{"n1"}},
		{name: "L2 owner reports, a dead speaker's report not given", world: l2One, live: []string{"n1"}, reports: map[string][]string{l4: {"n1"}, "l2/198.51.100.65": {"n1"}},
			status: metav1.ConditionTrue, reason: announce.ReasonAnnounced, message: l2Plain, deps: []string{"n1"}},
		{name: "L2 owner and another report", world: world{l2: true, nodes: []string{"n1", "n2!"}, ips: []string{v4}}, live: []string{"n1", "n2"},
			reports: map[string][]string{l4: {"n2", "n1"}},
			status:  metav1.ConditionTrue, reason: announce.ReasonAnnounced, deps: []string{"n1", "n2"},
			message: v4 + " answered by node n1 (L2; also still reported by n2)"},
		{name: "L2 owner has not reported", world: l2One, live: []string{"n1"},
			status: metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1"},
			message: v4 + ": node n1 should answer it (L2) and has not reported it yet"},
		{name: "L2 another node still reports", world: world{l2: true, nodes: []string{"n1", "n2!"}, ips: []string{v4}}, live: []string{"n1", "n2"},
			reports: map[string][]string{l4: {"n2"}},
			status:  metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1", "n2"},
			message: v4 + ": node n1 should answer it (L2) and has not reported it yet (still reported by n2)"},
		{name: "L2 one address confirmed, one waiting", world: world{l2: true, nodes: []string{"n1"}, ips: []string{v4, v6}}, live: []string{"n1"},
			reports: map[string][]string{l4: {"n1"}},
			status:  metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1"},
			message: v6 + ": node n1 should answer it (L2) and has not reported it yet; " + l2Plain},
		{name: "BGP reported by an expected node", world: bgpTwo, live: []string{"n1", "n2", "n3"},
			reports: map[string][]string{bgp4: {"n3", "n1"}},
			status:  metav1.ConditionTrue, reason: announce.ReasonAnnounced, deps: []string{"n1", "n2"},
			message: "advertised over BGP by n1"},
		{name: "BGP reported by no expected node", world: bgpTwo, live: []string{"n1", "n2", "n3"},
			reports: map[string][]string{bgp4: {"n3"}},
			status:  metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1", "n2"},
			message: "no node reports advertising it over BGP yet (expected: n1, n2; check the BGPPeers' sessions)"},
		{name: "BGP unreported, an expected speaker down", world: bgpTwo, live: []string{"n1"},
			status: metav1.ConditionFalse, reason: v1beta1.ReasonOwnerSpeakerDown, deps: []string{"n1", "n2"},
			message: "node n2 has no live speaker " + lease + "; no node reports advertising it over BGP yet (expected: n1, n2; check the BGPPeers' sessions)"},
		{name: "BGP every expected speaker down", world: bgpTwo,
			status: metav1.ConditionFalse, reason: v1beta1.ReasonOwnerSpeakerDown, deps: []string{"n1", "n2"},
			message: "node n1, n2 have no live speaker " + lease + "; no node", partial: true},
		{name: "BGP aggregated prefix", world: world{bgp: true, aggr: 24, nodes: []string{"n1"}, ips: []string{v4}}, live: []string{"n1"},
			reports: map[string][]string{bgp4: {"n1"}, "bgp/198.51.100.0/24": {"n1"}},
			status:  metav1.ConditionTrue, reason: announce.ReasonAnnounced, deps: []string{"n1"},
			message: "advertised over BGP by n1"},
		{name: "BGP aggregated prefix, host route reported", world: world{bgp: true, aggr: 24, nodes: []string{"n1"}, ips: []string{v4}}, live: []string{"n1"},
			reports: map[string][]string{bgp4: {"n1"}},
			status:  metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1"},
			message: "no node reports advertising it over BGP yet (expected: n1; check the BGPPeers' sessions)"},
		{name: "L2 and BGP confirmed", world: world{l2: true, bgp: true, nodes: []string{"n1"}, ips: []string{v4}}, live: []string{"n1"},
			reports: map[string][]string{l4: {"n1"}, bgp4: {"n1"}},
			status:  metav1.ConditionTrue, reason: announce.ReasonAnnounced, deps: []string{"n1"},
			message: l2Plain + "; advertised over BGP by n1"},
		{name: "L2 confirmed, BGP waiting", world: world{l2: true, bgp: true, nodes: []string{"n1"}, ips: []string{v4}}, live: []string{"n1"},
			reports: map[string][]string{l4: {"n1"}},
			status:  metav1.ConditionUnknown, reason: v1beta1.ReasonNotConfirmed, deps: []string{"n1"},
			message: "no node reports advertising it over BGP yet (expected: n1; check the BGPPeers' sessions); " + l2Plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := announced.Confirm(tc.world.input(t, tc.live, tc.reports))
			if got.Status != tc.status || got.Reason != tc.reason {
				t.Errorf("%s/%s (%q), want %s/%s", got.Status, got.Reason, got.Message, tc.status, tc.reason)
			}
			if tc.partial && !strings.Contains(got.Message, tc.message) || !tc.partial && got.Message != tc.message {
				t.Errorf("message %q, want %q", got.Message, tc.message)
			}
			if !slices.Equal(got.Deps, tc.deps) {
				t.Errorf("depends on %q, want %q", got.Deps, tc.deps)
			}
		})
	}
}

// TestConfirmOwnerOfKubernetesViewDown: when the node Kubernetes' view
// picks for an address has no live speaker and the live node it passed to
// has not reported yet, the condition is OwnerSpeakerDown naming both;
// with no live speaker at all, it names Kubernetes' owner alone.
func TestConfirmOwnerOfKubernetesViewDown(t *testing.T) {
	in := l2Two.input(t, []string{"n1", "n2"}, nil)
	first := announce.StatusOf(in.State, in.Key).L2[netip.MustParseAddr(v4)]
	other := map[string]string{"n1": "n2", "n2": "n1"}[first]
	if other == "" {
		t.Fatalf("no owner of %s in Kubernetes' view", v4)
	}
	in.Live = func(n string) bool { return n == other }
	got := announced.Confirm(in)
	want := "node " + first + " has no live speaker " + lease + "; " + v4 + ": node " + other + " should answer it (L2) and has not reported it yet"
	if got.Status != metav1.ConditionFalse || got.Reason != v1beta1.ReasonOwnerSpeakerDown || got.Message != want {
		t.Errorf("%s/%s %q, want False/%s %q", got.Status, got.Reason, got.Message, v1beta1.ReasonOwnerSpeakerDown, want)
	}
	if !slices.Equal(got.Deps, []string{"n1", "n2"}) {
		t.Errorf("depends on %q, want both nodes", got.Deps)
	}

	in.Live = func(string) bool { return false } // no live speaker: Kubernetes' owner named
	got = announced.Confirm(in)
	want = "no node with a live speaker may announce the Service: " + first + " may, but has no live speaker"
	if got.Status != metav1.ConditionFalse || got.Reason != v1beta1.ReasonOwnerSpeakerDown || !strings.HasPrefix(got.Message, want) {
		t.Errorf("%s/%s %q, want False/%s %q", got.Status, got.Reason, got.Message, v1beta1.ReasonOwnerSpeakerDown, want)
	}
	if !slices.Equal(got.Deps, []string{first}) {
		t.Errorf("depends on %q, want %s", got.Deps, first)
	}
}

// TestReportKeys: an address's L2 key and one BGP key per aggregation
// length, each once.
func TestReportKeys(t *testing.T) {
	in := world{bgp: true, aggr: 24, nodes: []string{"n1"}, ips: []string{v4}}.input(t, nil, nil)
	in.State.Config.BGPAdvertisements = append(in.State.Config.BGPAdvertisements, &config.BGPAdvertisement{AggregationLength: 32, AggregationLengthV6: 128},
		&config.BGPAdvertisement{AggregationLength: 24, AggregationLengthV6: 64})
	got := announced.ReportKeys(in.State, []netip.Addr{netip.MustParseAddr(v4), netip.MustParseAddr(v6)})
	want := []string{l4, "bgp/198.51.100.0/24", bgp4, "l2/" + v6, "bgp/2001:db8::64/128", "bgp/2001:db8::/64"}
	if !slices.Equal(got, want) {
		t.Errorf("report keys %q, want %q", got, want)
	}
}

// TestConfirmSharedLocalIncomplete: an address shared by Local Services
// no node serves in full is True SharedLocalIncomplete once the owner
// reports it (the SomePorts fallback), naming what is missing; while not
// reported it waits like any other.
func TestConfirmSharedLocalIncomplete(t *testing.T) {
	in := world{l2: true, nodes: []string{"node1", "node2"}, ips: []string{v4}}.input(t, []string{"node1", "node2"}, nil)
	web := in.State.Services[0]
	web.ETPLocal, web.SharingKey = true, "k"
	web.Endpoints = announce.Endpoints{AnyReady: true, Local: map[string]bool{"node1": true}}
	tls := web
	tls.Key = "ns/tls"
	tls.Endpoints = announce.Endpoints{AnyReady: true, Local: map[string]bool{"node2": true}}
	in.State.Services = []announce.Service{tls, web}
	owner := announce.StatusOf(in.State, "ns/web").L2[netip.MustParseAddr(v4)]
	if owner == "" {
		t.Fatal("no owner: the SomePorts fallback announces from a node with some of the pods")
	}
	c := announced.Confirm(in)
	if c.Status != metav1.ConditionUnknown || c.Reason != v1beta1.ReasonNotConfirmed {
		t.Errorf("unreported: %s %s %q", c.Status, c.Reason, c.Message)
	}
	in.Reports = map[string][]string{announced.L2Key(netip.MustParseAddr(v4)): {owner}}
	c = announced.Confirm(in)
	if c.Status != metav1.ConditionTrue || c.Reason != announce.ReasonSharedLocalIncomplete ||
		!strings.Contains(c.Message, "answered by node "+owner) || !strings.Contains(c.Message, "Service ns/tls has no ready local endpoint on node1") {
		t.Errorf("reported: %s %s %q", c.Status, c.Reason, c.Message)
	}
}
