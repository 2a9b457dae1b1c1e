package config

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
)

func TestPoolsParseAndDefault(t *testing.T) {
	p := poolObj("a", 0, "2001:db8:ff::/120", "198.51.100.70-198.51.100.80", "198.51.100.64/30")
	p.Spec.AvoidBuggyIPs = true
	p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{Priority: ptr(int32(5)), Namespaces: []string{"b", "a"}}
	cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{p}})
	wantNoProblems(t, ps)
	got := cfg.Pools["a"]
	if !got.AutoAssign || !got.AvoidBuggyIPs || *got.Priority != 5 || !reflect.DeepEqual(got.Namespaces, []string{"a", "b"}) {
		t.Errorf("pool = %+v", got)
	}
	if len(got.Ranges) != 3 || !got.Ranges[0].Is4() || got.Ranges[0].String() != "198.51.100.64/30" || got.Ranges[2].Is4() {
		t.Errorf("ranges not sorted v4 first: %v", got.Ranges)
	}
	if !got.HasFamily(true) || !got.HasFamily(false) {
		t.Error("HasFamily")
	}
}

func TestPoolProblemsLeaveOnlyThatPoolOut(t *testing.T) {
	cases := []struct {
		name, field string
		pool        *v1beta1.IPAddressPool
		fragment    string
	}{
		{"IPv6 range reversed", "spec.addresses[0]", poolObj("bad", 0, "2001:db8::ff-2001:db8::1"), "2001:db8::ff-2001:db8::1"},
		{"host bits", "spec.addresses[1]", poolObj("bad", 0, "198.51.100.0/28", "198.51.100.65/27"), "198.51.100.65/27"},
		{"self overlap", "spec.addresses[1]", poolObj("bad", 0, "198.51.100.0/28", "198.51.100.8-198.51.100.20"), "overlaps spec.addresses[0]"},
		{"no addresses", "spec.addresses", poolObj("bad", 0), "no addresses"},
		{"bad selector", "spec.serviceAllocation.serviceSelectors[0]", func() *v1beta1.IPAddressPool {
			p := poolObj("bad", 0, "198.51.100.0/28")
			p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{ServiceSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}
			return p
		}(), "invalid label selector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			good := poolObj("good", 5, "198.51.100.128/27")
			cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{tc.pool, good}})
			p := wantProblem(t, ps, "IPAddressPool", "bad", tc.field, ReasonInvalidField, tc.fragment)
			if !p.Ignored {
				t.Error("invalid pool not marked Ignored")
			}
			if _, ok := cfg.Pools["bad"]; ok {
				t.Error("invalid pool kept")
			}
			if _, ok := cfg.Pools["good"]; !ok {
				t.Error("a bad pool took down a good one")
			}
		})
	}
}

func TestOverlappingPoolsOlderWins(t *testing.T) {
	older := poolObj("zz-older", 1, "198.51.100.64/27")
	newer := poolObj("aa-newer", 2, "198.51.100.70-198.51.100.100")
	for _, order := range [][]*v1beta1.IPAddressPool{{older, newer}, {newer, older}} {
		cfg, ps := Build(Input{Pools: order})
		p := wantProblem(t, ps, "IPAddressPool", "aa-newer", "", ReasonConflicting, "zz-older")
		if p.ConflictsWith != "zz-older" || !p.Ignored {
			t.Errorf("problem = %+v", p)
		}
		if _, ok := cfg.Pools["zz-older"]; !ok {
			t.Fatal("a new overlapping pool disturbed the older one")
		}
		if _, ok := cfg.Pools["aa-newer"]; ok {
			t.Fatal("the newer overlapping pool was admitted")
		}
		if len(ProblemsOf(ps, "IPAddressPool", "zz-older")) != 0 {
			t.Error("the older pool got a problem")
		}
	}
}

func TestOverlapTieBrokenByName(t *testing.T) {
	cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{poolObj("b", 1, "198.51.100.0/28"), poolObj("a", 1, "198.51.100.8/29")}})
	wantProblem(t, ps, "IPAddressPool", "b", "", ReasonConflicting, "IPAddressPool a")
	if _, ok := cfg.Pools["a"]; !ok {
		t.Error("tie: a should win")
	}
}

func TestConflictChainAdmitsThirdPool(t *testing.T) {
	// b overlaps a (older) and is left out; c overlaps only b, so c is fine.
	cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{
		poolObj("a", 1, "198.51.100.0/28"), poolObj("b", 2, "198.51.100.8-198.51.100.20"), poolObj("c", 3, "198.51.100.16/29"),
	}})
	wantProblem(t, ps, "IPAddressPool", "b", "", ReasonConflicting, "IPAddressPool a")
	if _, ok := cfg.Pools["c"]; !ok {
		t.Errorf("c should be admitted: %v", ps)
	}
}

func TestDeletingPoolIsKeptAndMarked(t *testing.T) {
	p := poolObj("a", 0, "198.51.100.0/28")
	p.DeletionTimestamp = ptr(metav1.NewTime(t0))
	cfg, _ := Build(Input{Pools: []*v1beta1.IPAddressPool{p}})
	if !cfg.Pools["a"].Deleting {
		t.Error("deleting pool not marked")
	}
}

func TestAdvertisementPoolSelection(t *testing.T) {
	pools := []*v1beta1.IPAddressPool{poolObj("a", 0, "198.51.100.0/28"), poolObj("b", 1, "198.51.100.64/28"), poolObj("c", 2, "198.51.100.128/28")}
	pools[1].Labels = map[string]string{"tier": "edge"}
	bySel := l2Obj("by-selector")
	bySel.Spec.IPAddressPoolSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "edge"}}}
	cfg, ps := Build(Input{Pools: pools, L2Advertisements: []*v1beta1.L2Advertisement{
		l2Obj("all"), l2Obj("named", "c", "a", "missing"), bySel, l2Obj("only-missing", "missing"),
	}})
	got := map[string][]string{}
	for _, a := range cfg.L2Advertisements {
		got[a.Name] = a.Pools
	}
	want := map[string][]string{"all": {"a", "b", "c"}, "named": {"a", "c"}, "by-selector": {"b"}, "only-missing": {}}
	for name, w := range want {
		if len(w) == 0 && len(got[name]) == 0 {
			continue
		}
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s selects %v, want %v", name, got[name], w)
		}
	}
	p := wantProblem(t, ps, "L2Advertisement", "named", "spec.ipAddressPools[2]", ReasonPoolNotFound, "missing")
	if p.Ignored {
		t.Error("a missing pool reference must not ignore the whole advertisement")
	}
	wantProblem(t, ps, "L2Advertisement", "only-missing", "spec.ipAddressPools[0]", ReasonPoolNotFound)
}

func TestAdvertisementNamingAConflictingPool(t *testing.T) {
	_, ps := Build(Input{
		Pools:             []*v1beta1.IPAddressPool{poolObj("old", 0, "198.51.100.0/28"), poolObj("new", 1, "198.51.100.0/29")},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpAdvObj("adv", func(s *v1beta1.BGPAdvertisementSpec) { s.IPAddressPools = []string{"new"} })},
	})
	wantProblem(t, ps, "BGPAdvertisement", "adv", "spec.ipAddressPools[0]", ReasonPoolNotFound, "left out of the configuration")
}

func TestAdvertisementSelectors(t *testing.T) {
	adv := l2Obj("adv")
	adv.Spec.NodeSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "a"}}}
	adv.Spec.ServiceSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}
	adv.Spec.Interfaces = []string{"eth1", "eth0"}
	broken := l2Obj("broken")
	broken.Spec.NodeSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}}
	cfg, ps := Build(Input{L2Advertisements: []*v1beta1.L2Advertisement{adv, broken}})
	if len(cfg.L2Advertisements) != 1 {
		t.Fatalf("advertisements: %v", cfg.L2Advertisements)
	}
	a := cfg.L2Advertisements[0]
	if !a.SelectsNode(labels.Set{"zone": "a"}) || a.SelectsNode(labels.Set{"zone": "b"}) {
		t.Error("node selector")
	}
	if !a.SelectsService(labels.Set{"app": "web"}) || a.SelectsService(nil) {
		t.Error("service selector")
	}
	if !reflect.DeepEqual(a.Interfaces, []string{"eth0", "eth1"}) {
		t.Errorf("interfaces %v", a.Interfaces)
	}
	if p := wantProblem(t, ps, "L2Advertisement", "broken", "spec.nodeSelectors[0]", ReasonInvalidField); !p.Ignored {
		t.Error("an invalid selector must ignore the advertisement (dropping it would widen the selection)")
	}
}

func TestCommunitiesAndAliases(t *testing.T) {
	adv := bgpAdvObj("adv", func(s *v1beta1.BGPAdvertisementSpec) {
		s.Communities = []string{"64512:100", "no-export", "large:64512:1:2", "nope", "64512:100"}
	})
	cfg, ps := Build(Input{
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{adv},
		Communities: []*v1beta1.Community{
			communityObj("old", 0, "no-export", "65535:65281"),
			communityObj("new", 1, "no-export", "1:1", "other", "large:1:2:3"),
		},
	})
	a := cfg.BGPAdvertisements[0]
	if !reflect.DeepEqual(a.Communities, []uint32{64512<<16 | 100, 65535<<16 | 65281}) {
		t.Errorf("communities %v", a.Communities)
	}
	if !reflect.DeepEqual(a.LargeCommunities, [][3]uint32{{64512, 1, 2}}) {
		t.Errorf("large %v", a.LargeCommunities)
	}
	wantProblem(t, ps, "BGPAdvertisement", "adv", "spec.communities[3]", ReasonAliasNotFound, "nope")
	wantProblem(t, ps, "Community", "new", "spec.communities[0].name", ReasonDuplicateAlias, "Community old")
}

func TestParseCommunity(t *testing.T) {
	for in, want := range map[string]uint32{"0:0": 0, "65535:65535": 0xffffffff, "1:2": 1<<16 | 2} {
		got, l, err := ParseCommunity(in)
		if err != nil || l != nil || got != want {
			t.Errorf("%s = %d %v %v", in, got, l, err)
		}
	}
	for _, in := range []string{"65536:1", "1", "a:b", "large:1:2", "large:1:2:4294967296", ""} {
		if _, _, err := ParseCommunity(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestPeerDefaultsSecretsAndBFD(t *testing.T) {
	in := Input{
		BFDProfiles: []*v1beta1.BFDProfile{{ObjectMeta: meta("fast", 0), Spec: v1beta1.BFDProfileSpec{ReceiveInterval: ptr(int32(100)), TransmitInterval: ptr(int32(100))}}},
		Secrets:     []*corev1.Secret{secretObj("pw", "s3cret")},
		Peers: []*v1beta1.BGPPeer{
			peerObj("plain", 0, nil),
			peerObj("tuned", 0, func(s *v1beta1.BGPPeerSpec) {
				s.PeerAddress = "198.51.100.2"
				s.HoldTime = &metav1.Duration{Duration: 9 * time.Second}
				s.PasswordSecret = "pw"
				s.BFDProfile = "fast"
			}),
			peerObj("no-secret", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.3"; s.PasswordSecret = "absent" }),
			peerObj("no-bfd", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.4"; s.BFDProfile = "absent" }),
		},
	}
	cfg, ps := Build(in)
	peers := map[string]*Peer{}
	for _, p := range cfg.Peers {
		peers[p.Name] = p
	}
	if p := peers["plain"]; p.HoldTime != 90*time.Second || p.KeepaliveTime != 30*time.Second || p.ConnectTime != 5*time.Second || !p.IsEBGP() || p.Port != 179 {
		t.Errorf("defaults: %+v", p)
	}
	if p := peers["tuned"]; p.KeepaliveTime != 3*time.Second || p.Password != "s3cret" || p.BFD == nil || p.BFD.ReceiveInterval != 100*time.Millisecond || p.BFD.DetectMultiplier != 3 {
		t.Errorf("tuned: %+v", p)
	}
	if _, ok := peers["no-secret"]; ok {
		t.Error("a peer whose Secret is missing must not open a session")
	}
	wantProblem(t, ps, "BGPPeer", "no-secret", "spec.passwordSecret", ReasonSecretNotFound, "absent")
	if p := peers["no-bfd"]; p == nil || p.BFD != nil {
		t.Error("a peer with a missing BFD profile runs without BFD")
	}
	wantProblem(t, ps, "BGPPeer", "no-bfd", "spec.bfdProfile", ReasonBFDNotFound, "without BFD")
}

func TestPeerDynamicASNAndPassive(t *testing.T) {
	dyn := func(class string) func(*v1beta1.BGPPeerSpec) {
		return func(s *v1beta1.BGPPeerSpec) { s.PeerASN = 0; s.DynamicASN = class }
	}
	in := Input{Peers: []*v1beta1.BGPPeer{
		peerObj("ext", 0, func(s *v1beta1.BGPPeerSpec) { dyn("external")(s); s.Passive = true }),
		peerObj("int", 0, func(s *v1beta1.BGPPeerSpec) { dyn("internal")(s); s.PeerAddress = "198.51.100.2" }),
		peerObj("both", 0, func(s *v1beta1.BGPPeerSpec) { s.DynamicASN = "external"; s.PeerAddress = "198.51.100.3" }),
		peerObj("neither", 0, func(s *v1beta1.BGPPeerSpec) { dyn("")(s); s.PeerAddress = "198.51.100.4" }),
		peerObj("bad-class", 0, func(s *v1beta1.BGPPeerSpec) { dyn("any")(s); s.PeerAddress = "198.51.100.5" }),
	}}
	cfg, ps := Build(in)
	peers := map[string]*Peer{}
	for _, p := range cfg.Peers {
		peers[p.Name] = p
	}
	if p := peers["ext"]; p == nil || p.DynamicASN != DynamicExternal || !p.Passive || !p.IsEBGP() || p.PeerASN != 0 {
		t.Errorf("ext: %+v", p)
	}
	if p := peers["int"]; p == nil || p.DynamicASN != DynamicInternal || p.Passive || p.IsEBGP() {
		t.Errorf("int: %+v", p)
	}
	for _, n := range []string{"both", "neither", "bad-class"} {
		if _, ok := peers[n]; ok {
			t.Errorf("%s: an invalid ASN choice must open no session", n)
		}
	}
	wantProblem(t, ps, "BGPPeer", "both", "spec.dynamicASN", ReasonInvalidField, "mutually exclusive")
	wantProblem(t, ps, "BGPPeer", "neither", "spec.peerASN", ReasonInvalidField, "one of spec.peerASN and spec.dynamicASN is required")
	wantProblem(t, ps, "BGPPeer", "bad-class", "spec.dynamicASN", ReasonInvalidField, `"any" is neither internal nor external`)
}

func TestPeerVRF(t *testing.T) {
	in := Input{Peers: []*v1beta1.BGPPeer{
		peerObj("red", 0, func(s *v1beta1.BGPPeerSpec) { s.VRF = "red" }),
		peerObj("plain", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.2" }),
		peerObj("slash", 0, func(s *v1beta1.BGPPeerSpec) { s.VRF = "red/blue"; s.PeerAddress = "198.51.100.3" }),
		peerObj("long", 0, func(s *v1beta1.BGPPeerSpec) { s.VRF = "a-very-long-vrf-name"; s.PeerAddress = "198.51.100.4" }),
		peerObj("passive", 0, func(s *v1beta1.BGPPeerSpec) { s.VRF = "red"; s.Passive = true; s.PeerAddress = "198.51.100.5" }),
		peerObj("bfd", 0, func(s *v1beta1.BGPPeerSpec) { s.VRF = "red"; s.BFDProfile = "fast"; s.PeerAddress = "198.51.100.6" }),
	}}
	cfg, ps := Build(in)
	peers := map[string]*Peer{}
	for _, p := range cfg.Peers {
		peers[p.Name] = p
	}
	if p := peers["red"]; p == nil || p.VRF != "red" {
		t.Errorf("red: %+v", p)
	}
	if p := peers["plain"]; p == nil || p.VRF != "" {
		t.Errorf("plain: %+v", p)
	}
	for _, n := range []string{"slash", "long", "passive", "bfd"} {
		if _, ok := peers[n]; ok {
			t.Errorf("%s: an invalid vrf must open no session", n)
		}
	}
	wantProblem(t, ps, "BGPPeer", "slash", "spec.vrf", ReasonInvalidField, "not a Linux interface name")
	wantProblem(t, ps, "BGPPeer", "long", "spec.vrf", ReasonInvalidField, "not a Linux interface name")
	wantProblem(t, ps, "BGPPeer", "passive", "spec.vrf", ReasonInvalidField, "spec.passive is not supported with spec.vrf")
	wantProblem(t, ps, "BGPPeer", "bfd", "spec.vrf", ReasonInvalidField, "spec.bfdProfile is not supported with spec.vrf")
}

func TestPeerAddressFamilies(t *testing.T) {
	in := Input{Peers: []*v1beta1.BGPPeer{
		peerObj("default", 0, nil),
		peerObj("v6-only", 0, func(s *v1beta1.BGPPeerSpec) {
			s.PeerAddress = "198.51.100.2"
			s.AddressFamilies = []string{"IPv6"}
		}),
		peerObj("both", 0, func(s *v1beta1.BGPPeerSpec) {
			s.PeerAddress = "198.51.100.3"
			s.AddressFamilies = []string{"IPv6", "IPv4", "IPv6"}
		}),
		peerObj("bad", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.4"; s.AddressFamilies = []string{"ipv4"} }),
	}}
	cfg, ps := Build(in)
	peers := map[string]*Peer{}
	for _, p := range cfg.Peers {
		peers[p.Name] = p
	}
	if p := peers["default"]; p == nil || p.AddressFamilies != nil {
		t.Errorf("default: %+v", p)
	}
	if p := peers["v6-only"]; p == nil || !slices.Equal(p.AddressFamilies, []string{"IPv6"}) {
		t.Errorf("v6-only: %+v", p)
	}
	if p := peers["both"]; p == nil || !slices.Equal(p.AddressFamilies, []string{"IPv4", "IPv6"}) {
		t.Errorf("both, sorted and once each: %+v", p)
	}
	if _, ok := peers["bad"]; ok {
		t.Error("a peer with an unknown address family must open no session")
	}
	wantProblem(t, ps, "BGPPeer", "bad", "spec.addressFamilies", ReasonInvalidField, `"ipv4" is neither IPv4 nor IPv6`)
}

func TestDuplicatePeerAddressNewerIgnored(t *testing.T) {
	cfg, ps := Build(Input{Peers: []*v1beta1.BGPPeer{peerObj("second", 2, nil), peerObj("first", 1, nil)}})
	if len(cfg.Peers) != 1 || cfg.Peers[0].Name != "first" {
		t.Fatalf("peers %v", cfg.Peers)
	}
	wantProblem(t, ps, "BGPPeer", "second", "spec.peerAddress", ReasonDuplicatePeer, "BGPPeer first")
}

func TestAdvertisementPeersAndLocalPref(t *testing.T) {
	ibgp := peerObj("ibgp", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerASN = 64513; s.PeerAddress = "198.51.100.2" })
	ebgp := peerObj("ebgp", 0, nil)
	cfg, ps := Build(Input{
		Peers: []*v1beta1.BGPPeer{ibgp, ebgp},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{
			bgpAdvObj("to-ibgp", func(s *v1beta1.BGPAdvertisementSpec) {
				s.Peers = []string{"ibgp", "gone"}
				s.LocalPref = ptr(int64(200))
			}),
			bgpAdvObj("to-all", func(s *v1beta1.BGPAdvertisementSpec) { s.LocalPref = ptr(int64(200)) }),
			bgpAdvObj("to-nobody", func(s *v1beta1.BGPAdvertisementSpec) { s.Peers = []string{"gone"} }),
		},
	})
	advs := map[string]*BGPAdvertisement{}
	for _, a := range cfg.BGPAdvertisements {
		advs[a.Name] = a
	}
	if !advs["to-ibgp"].SelectsPeer("ibgp") || advs["to-ibgp"].SelectsPeer("ebgp") {
		t.Error("to-ibgp peers")
	}
	if !advs["to-all"].SelectsPeer("ebgp") || advs["to-nobody"].SelectsPeer("ebgp") || advs["to-nobody"].SelectsPeer("ibgp") {
		t.Error("a list of missing peers must select nobody, not everybody")
	}
	wantProblem(t, ps, "BGPAdvertisement", "to-ibgp", "spec.peers[1]", ReasonPeerNotFound, "gone")
	wantProblem(t, ps, "BGPAdvertisement", "to-all", "spec.localPref", ReasonLocalPrefOnEBGP, "ebgp")
	if len(ProblemsOf(ps, "BGPAdvertisement", "to-ibgp")) != 1 {
		t.Error("localPref toward iBGP only must not be reported")
	}
}

func TestAggregationMustStayInsideThePool(t *testing.T) {
	cfg, ps := Build(Input{
		Pools: []*v1beta1.IPAddressPool{poolObj("p", 0, "198.51.100.128/27", "2001:db8:ff::/120")},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{
			bgpAdvObj("fits", func(s *v1beta1.BGPAdvertisementSpec) {
				s.AggregationLength = ptr(int32(28))
				s.AggregationLengthV6 = ptr(int32(124))
			}),
			bgpAdvObj("too-short", func(s *v1beta1.BGPAdvertisementSpec) { s.AggregationLength = ptr(int32(24)) }),
		},
	})
	advs := map[string]*BGPAdvertisement{}
	for _, a := range cfg.BGPAdvertisements {
		advs[a.Name] = a
	}
	if advs["fits"].AggregationLength != 28 || advs["fits"].AggregationLengthV6 != 124 {
		t.Errorf("fits: %+v", advs["fits"])
	}
	wantProblem(t, ps, "BGPAdvertisement", "too-short", "spec.aggregationLength", ReasonAggregation, "/24", "198.51.100.128/27")
	if advs["too-short"].AggregationLength != 32 {
		t.Error("too-short aggregation must fall back to host routes")
	}
	if len(ProblemsOf(ps, "BGPAdvertisement", "fits")) != 0 {
		t.Errorf("fits reported: %v", ps)
	}
}

func TestAggregateFits(t *testing.T) {
	cases := []struct {
		first, last string
		length      int
		want        bool
	}{
		{"198.51.100.128", "198.51.100.159", 27, true},
		{"198.51.100.128", "198.51.100.159", 28, true},
		{"198.51.100.128", "198.51.100.159", 26, false},
		{"198.51.100.130", "198.51.100.159", 28, false},
		{"198.51.100.128", "198.51.100.150", 28, false},
		{"198.51.100.7", "198.51.100.7", 32, true},
		{"2001:db8::", "2001:db8::ffff", 112, true},
		{"2001:db8::", "2001:db8::ffff", 111, false},
	}
	for _, c := range cases {
		if got := aggregateFits(mustAddr(c.first), mustAddr(c.last), c.length); got != c.want {
			t.Errorf("%s-%s /%d = %v", c.first, c.last, c.length, got)
		}
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	in := Input{
		Pools:            []*v1beta1.IPAddressPool{poolObj("c", 3, "198.51.100.0/28"), poolObj("a", 1, "198.51.100.0/29"), poolObj("b", 2, "198.51.100.64/28")},
		L2Advertisements: []*v1beta1.L2Advertisement{l2Obj("z", "x"), l2Obj("y", "b", "a")},
	}
	cfg1, ps1 := Build(in)
	in.Pools[0], in.Pools[2] = in.Pools[2], in.Pools[0]
	in.L2Advertisements[0], in.L2Advertisements[1] = in.L2Advertisements[1], in.L2Advertisements[0]
	cfg2, ps2 := Build(in)
	if !reflect.DeepEqual(ps1, ps2) || !reflect.DeepEqual(cfg1.PoolNames(), cfg2.PoolNames()) {
		t.Errorf("input order changed the result:\n%v\n%v", ps1, ps2)
	}
	if cfg1.L2Advertisements[0].Name != "y" || cfg2.L2Advertisements[0].Name != "y" {
		t.Error("advertisements not sorted")
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestAdvertisementLinkBandwidth(t *testing.T) {
	cfg, _ := Build(Input{
		Peers: []*v1beta1.BGPPeer{peerObj("p", 0, nil)},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{
			bgpAdvObj("default", nil),
			bgpAdvObj("none", func(s *v1beta1.BGPAdvertisementSpec) { s.LinkBandwidth = v1beta1.LinkBandwidthNone }),
			bgpAdvObj("weighted", func(s *v1beta1.BGPAdvertisementSpec) {
				s.LinkBandwidth = v1beta1.LinkBandwidthReadyLocalEndpoints
			}),
		},
	})
	want := map[string]bool{"default": false, "none": false, "weighted": true}
	for _, a := range cfg.BGPAdvertisements {
		if a.LinkBandwidth != want[a.Name] {
			t.Errorf("%s: LinkBandwidth = %v, want %v", a.Name, a.LinkBandwidth, want[a.Name])
		}
	}
	if len(cfg.BGPAdvertisements) != 3 {
		t.Fatalf("got %d advertisements, want 3", len(cfg.BGPAdvertisements))
	}
}
