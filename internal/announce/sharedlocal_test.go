package announce

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// TestSharedLocalNodesExhaustive: two Local Services over three nodes,
// every placement of their endpoints (2^3 × 2^3), both fallbacks, and
// every subset of candidates, against the rule written plainly.
func TestSharedLocalNodesExhaustive(t *testing.T) {
	names := []string{"node1", "node2", "node3"}
	on := func(mask int) []string {
		var out []string
		for i, n := range names {
			if mask&(1<<i) != 0 {
				out = append(out, n)
			}
		}
		return out
	}
	for am := range 8 {
		for bm := range 8 {
			for cm := range 8 {
				for _, fb := range []string{v1beta1.LocalFallbackSomePorts, v1beta1.LocalFallbackNone, ""} {
					a := local(svc("ns/a", "198.51.100.1"), on(am)...)
					b := local(svc("ns/b", "198.51.100.1"), on(bm)...)
					cands := on(cm)
					got, complete := SharedLocalNodes(cands, []*Service{&a, &b}, fb)
					want := on(am & bm & cm)
					wantComplete := len(want) > 0
					if !wantComplete && fb != v1beta1.LocalFallbackNone {
						want = on((am | bm) & cm)
					}
					if !slices.Equal(got, want) || complete != wantComplete {
						t.Errorf("a on %v, b on %v, candidates %v, fallback %q: %v %v, want %v %v",
							on(am), on(bm), cands, fb, got, complete, want, wantComplete)
					}
				}
			}
		}
	}
}

func TestSharedLocalNodesClusterAndSingle(t *testing.T) {
	cands := []string{"node1", "node2", "node3"}
	c := svc("ns/c", "198.51.100.1")
	if got, complete := SharedLocalNodes(cands, []*Service{&c}, v1beta1.LocalFallbackNone); !slices.Equal(got, cands) || !complete {
		t.Errorf("Cluster policy: %v %v, want every candidate", got, complete)
	}
	a := local(svc("ns/a", "198.51.100.1"), "node2")
	if got, complete := SharedLocalNodes(cands, []*Service{&a}, v1beta1.LocalFallbackNone); !slices.Equal(got, []string{"node2"}) || !complete {
		t.Errorf("one Local Service: %v %v", got, complete)
	}
	// a Cluster-policy holder restricts nothing
	if got, _ := SharedLocalNodes(cands, []*Service{&a, &c}, v1beta1.LocalFallbackNone); !slices.Equal(got, []string{"node2"}) {
		t.Errorf("Local and Cluster: %v", got)
	}
	none := local(svc("ns/n", "198.51.100.1"))
	if got, complete := SharedLocalNodes(cands, []*Service{&none}, v1beta1.LocalFallbackSomePorts); len(got) != 0 || complete {
		t.Errorf("no endpoint at all: %v %v", got, complete)
	}
}

func TestLocalGaps(t *testing.T) {
	cands := []string{"node3", "node1", "node2"}
	a := local(svc("ns/a", "198.51.100.1"), "node1", "node2")
	b := local(svc("ns/b", "198.51.100.1"), "node3")
	c := svc("ns/c", "198.51.100.1")
	cases := []struct {
		name string
		svcs []*Service
		want []LocalGap
	}{
		{"disjoint", []*Service{&a, &b, &c}, []LocalGap{{"ns/a", []string{"node3"}}, {"ns/b", []string{"node1", "node2"}}}},
		{"one node has both", []*Service{&a, ptr(local(svc("ns/b", "198.51.100.1"), "node2"))}, nil},
		{"one has none", []*Service{&a, ptr(local(svc("ns/b", "198.51.100.1")))}, []LocalGap{{"ns/b", []string{"node1", "node2"}}}},
		{"none has any", []*Service{ptr(local(svc("ns/a", "198.51.100.1"))), ptr(local(svc("ns/b", "198.51.100.1")))},
			[]LocalGap{{"ns/a", nil}, {"ns/b", nil}}},
	}
	for _, c := range cases {
		if got := LocalGaps(cands, c.svcs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestGapWordsHideOtherNamespaces(t *testing.T) {
	ip := netip.MustParseAddr("198.51.100.1")
	gaps := []LocalGap{{"team-a/web", []string{"node1"}}, {"team-b/secret-api", []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"}}, {"team-a/idle", nil}}
	w := GapWords(ip, gaps, "team-a/web")
	for _, want := range []string{"198.51.100.1", "Service team-a/web has no ready local endpoint on node1",
		"a Service in another namespace has no ready local endpoint on n1, n2, n3, n4, n5 and 2 more",
		"Service team-a/idle has no ready local endpoint on any candidate node"} {
		if !strings.Contains(w, want) {
			t.Errorf("missing %q in %q", want, w)
		}
	}
	if strings.Contains(w, "secret-api") || strings.Contains(w, "team-b") {
		t.Errorf("names another namespace's Service: %q", w)
	}
}

// sharedState is two Local Services with different pods on one L2 and
// BGP address of a pool with the given fallback.
func sharedState(t *testing.T, fallback string, aOn, bOn []string) State {
	p := pool("p", "198.51.100.0/28")
	if fallback != "" {
		p.Spec.Sharing = &v1beta1.PoolSharing{LocalFallback: fallback}
	}
	a := local(svc("ns/a", "198.51.100.5"), aOn...)
	b := local(svc("ns/b", "198.51.100.5"), bOn...)
	a.SharingKey, b.SharingKey = "k", "k"
	return State{
		Config: cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{p}, L2Advertisements: []*v1beta1.L2Advertisement{l2ad("all", nil)},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("all", nil)}, Peers: []*v1beta1.BGPPeer{peer("tor", "198.51.100.14", 64512, nil)}}),
		Nodes:    nodes("node1", "node2", "node3"),
		Services: []Service{a, b},
	}
}

func bgpAdvertisers(st State) []string {
	var out []string
	for _, n := range []string{"node1", "node2", "node3"} {
		if len(BGP(st, n).Routes) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func TestSharedLocalL2AndBGP(t *testing.T) {
	cases := []struct {
		name       string
		fallback   string
		aOn, bOn   []string
		l2In       []string // the owner is one of these; none when empty
		bgp        []string
		reason     string
		announced  bool
		gapMention string
	}{
		{"one node has both", "", []string{"node1", "node2"}, []string{"node2", "node3"}, []string{"node2"}, []string{"node2"}, ReasonAnnounced, true, ""},
		{"two nodes have both", v1beta1.LocalFallbackNone, []string{"node1", "node2", "node3"}, []string{"node2", "node3"},
			[]string{"node2", "node3"}, []string{"node2", "node3"}, ReasonAnnounced, true, ""},
		{"none has both, SomePorts by default", "", []string{"node1"}, []string{"node3"}, []string{"node1", "node3"}, []string{"node1", "node3"},
			ReasonSharedLocalIncomplete, true, "Service ns/a has no ready local endpoint on node3"},
		{"none has both, None", v1beta1.LocalFallbackNone, []string{"node1"}, []string{"node3"}, nil, nil,
			ReasonSharedLocalIncomplete, false, "announced from no node"},
		{"one has no pod, SomePorts", v1beta1.LocalFallbackSomePorts, []string{"node1"}, nil, []string{"node1"}, []string{"node1"},
			ReasonSharedLocalIncomplete, true, "Service ns/b has no ready local endpoint on node1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := sharedState(t, c.fallback, c.aOn, c.bOn)
			o := owners(L2(st))["198.51.100.5"]
			if (o == "") != (len(c.l2In) == 0) || o != "" && !slices.Contains(c.l2In, o) {
				t.Errorf("L2 owner %q, want one of %v", o, c.l2In)
			}
			if got := bgpAdvertisers(st); !slices.Equal(got, c.bgp) {
				t.Errorf("BGP from %v, want %v", got, c.bgp)
			}
			var m BGPMemo
			for _, n := range []string{"node1", "node2", "node3"} {
				if got, want := m.Decide(st, n), BGP(st, n); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: memo %+v, BGP %+v", n, got, want)
				}
			}
			for _, key := range []string{"ns/a", "ns/b"} {
				for name, s := range map[string]ServiceStatus{"Statuses": Statuses(st)[key], "StatusOf": StatusOf(st, key)} {
					if s.Reason != c.reason || s.Announced != c.announced || !strings.Contains(s.Message, c.gapMention) {
						t.Errorf("%s(%s) = %v %s %q", name, key, s.Announced, s.Reason, s.Message)
					}
					if (s.Gap != "") != (c.reason == ReasonSharedLocalIncomplete) {
						t.Errorf("%s(%s) gap %q", name, key, s.Gap)
					}
				}
			}
		})
	}
}

// TestSharedLocalChoiceFollowsPods: moving a pod moves the L2 owner and
// the BGP advertisers to the node that now has both, and the memos see it
// when only the moved Service changed.
func TestSharedLocalChoiceFollowsPods(t *testing.T) {
	st := sharedState(t, "", []string{"node1", "node2"}, []string{"node2", "node3"})
	var l2 L2Memo
	var bm BGPMemo
	holders := func(ip netip.Addr) []*Service {
		var out []*Service
		for i := range st.Services {
			if slices.Contains(st.Services[i].IPs, ip) {
				out = append(out, &st.Services[i])
			}
		}
		return out
	}
	st.Services[0].Rev, st.Services[1].Rev = 1, 2
	l2.Update(st, Changes{All: true}, holders)
	bm.Update(st, "node1", Changes{All: true})
	for step, bOn := range [][]string{{"node1"}, {"node3"}, {"node2", "node1"}} {
		b := local(svc("ns/b", "198.51.100.5"), bOn...)
		b.SharingKey, b.Rev = "k", uint64(3+step)
		st.Services[1] = b
		ch := Changes{IPs: []netip.Addr{netip.MustParseAddr("198.51.100.5")}, Keys: []string{"ns/b"}}
		l2.Update(st, ch, holders)
		bm.Update(st, "node1", ch)
		want := owners(L2(st))["198.51.100.5"]
		if got, _ := l2.Owner(netip.MustParseAddr("198.51.100.5")); got.Node != want {
			t.Errorf("b on %v: memo owner %s, L2 %s", bOn, got.Node, want)
		}
		if !reflect.DeepEqual(bm.Result(), BGP(st, "node1")) {
			t.Errorf("b on %v: BGP memo %+v, BGP %+v", bOn, bm.Result(), BGP(st, "node1"))
		}
		both := []string{}
		for _, n := range []string{"node1", "node2"} {
			if slices.Contains(bOn, n) {
				both = append(both, n)
			}
		}
		if len(both) > 0 && !slices.Contains(both, want) {
			t.Errorf("b on %v: owner %s, want one of %v", bOn, want, both)
		}
		if got := bgpAdvertisers(st); len(both) > 0 && !slices.Equal(got, both) {
			t.Errorf("b on %v: BGP from %v, want %v", bOn, got, both)
		}
	}
}

// TestSharedLocalExcludedNodeDoesNotCount: a node that may not announce
// does not count as serving every port.
func TestSharedLocalExcludedNodeDoesNotCount(t *testing.T) {
	st := sharedState(t, v1beta1.LocalFallbackSomePorts, []string{"node1", "node3"}, []string{"node3", "node2"})
	st.Nodes[2].Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true"
	if got := bgpAdvertisers(st); !slices.Equal(got, []string{"node1", "node2"}) {
		t.Errorf("the only node with both is excluded: BGP from %v, want the fallback node1, node2", got)
	}
	if o := owners(L2(st))["198.51.100.5"]; o != "node1" && o != "node2" {
		t.Errorf("the only node with both is excluded: L2 owner %q, want the fallback node1 or node2", o)
	}
}
