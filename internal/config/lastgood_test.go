package config

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
)

// edit returns a copy of obj as the API server stores an edit: same UID,
// next generation.
func edit[T interface{ DeepCopy() T }](obj T, meta func(T) *metav1.ObjectMeta, mutate func(T)) T {
	c := obj.DeepCopy()
	m := meta(c)
	m.Generation++
	mutate(c)
	return c
}

func poolMeta(p *v1beta1.IPAddressPool) *metav1.ObjectMeta { return &p.ObjectMeta }
func l2Meta(p *v1beta1.L2Advertisement) *metav1.ObjectMeta { return &p.ObjectMeta }
func peerMeta(p *v1beta1.BGPPeer) *metav1.ObjectMeta       { return &p.ObjectMeta }
func withUID[T interface{ GetObjectMeta() metav1.Object }](o T, uid string) T {
	o.GetObjectMeta().SetUID(types.UID(uid))
	o.GetObjectMeta().SetGeneration(1)
	return o
}

// wantKept fails unless the object has a problem on field that keeps its
// last valid version.
func wantKept(t *testing.T, ps []Problem, kind, name, field string) {
	t.Helper()
	for _, p := range ProblemsOf(ps, kind, name) {
		if p.Field == field && p.KeptLastValid && !p.Ignored && strings.HasSuffix(p.Message, "keeping the last valid version") {
			return
		}
	}
	t.Fatalf("%s %s: no problem on %s keeping the last valid version; problems: %v", kind, name, field, ps)
}

func poolRanges(cfg *Config, name string) string {
	p, ok := cfg.Pools[name]
	if !ok {
		return "<left out>"
	}
	var s []string
	for _, r := range p.Ranges {
		s = append(s, r.String())
	}
	return strings.Join(s, ",")
}

func TestLastGoodOlderPoolGrownIntoNewer(t *testing.T) {
	g := NewLastGood()
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	b := withUID(poolObj("b", 2, "198.51.100.16/28"), "ub")
	_, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{a, b}})
	wantNoProblems(t, ps)
	grown := edit(a, poolMeta, func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.0/27"} })
	cfg, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{grown, b}})
	if got := poolRanges(cfg, "a"); got != "198.51.100.0/28" {
		t.Errorf("pool a in force = %s, want its last valid range", got)
	}
	if got := poolRanges(cfg, "b"); got != "198.51.100.16/28" {
		t.Errorf("pool b in force = %s, want it untouched", got)
	}
	wantKept(t, ps, kindPool, "a", "spec.addresses")
	wantProblem(t, ps, kindPool, "a", "spec.addresses", ReasonOverlapsPoolInUse, "IPAddressPool b")
	if len(ProblemsOf(ps, kindPool, "b")) != 0 {
		t.Errorf("pool b has problems: %v", ps)
	}
	// Fixing the edit puts the new version in force.
	fixed := edit(grown, poolMeta, func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.0/28", "198.51.100.64/28"} })
	cfg, ps = g.Build(Input{Pools: []*v1beta1.IPAddressPool{fixed, b}})
	wantNoProblems(t, ps)
	if got := poolRanges(cfg, "a"); got != "198.51.100.0/28,198.51.100.64/28" {
		t.Errorf("pool a after the fix = %s", got)
	}
}

func TestLastGoodPoolEdits(t *testing.T) {
	for _, c := range []struct {
		name, field string
		mutate      func(*v1beta1.IPAddressPool)
	}{
		{"entry overlaps another entry", "spec.addresses[1]", func(p *v1beta1.IPAddressPool) {
			p.Spec.Addresses = []string{"198.51.100.0/28", "198.51.100.8/29"}
		}},
		{"reversed IPv6 range", "spec.addresses[1]", func(p *v1beta1.IPAddressPool) {
			p.Spec.Addresses = []string{"198.51.100.0/28", "2001:db8::10-2001:db8::1"}
		}},
		{"In without values in namespaceSelectors", "spec.serviceAllocation.namespaceSelectors[0]", func(p *v1beta1.IPAddressPool) {
			p.Spec.ServiceAllocation = &v1beta1.ServiceAllocation{NamespaceSelectors: []metav1.LabelSelector{{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewLastGood()
			a := withUID(poolObj("a", 1, "198.51.100.0/28", "2001:db8::/124"), "ua")
			if _, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{a}}); len(ps) > 0 {
				t.Fatal(ps)
			}
			cfg, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{edit(a, poolMeta, c.mutate)}})
			if got := poolRanges(cfg, "a"); got != "198.51.100.0/28,2001:db8::/124" {
				t.Errorf("pool a in force = %s, want its last valid version", got)
			}
			wantKept(t, ps, kindPool, "a", c.field)
			// A pool never valid is left out.
			fresh := NewLastGood()
			bad := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
			c.mutate(bad)
			cfg, ps = fresh.Build(Input{Pools: []*v1beta1.IPAddressPool{bad}})
			if _, in := cfg.Pools["a"]; in {
				t.Error("a pool that was never valid is in force")
			}
			if p := wantProblem(t, ps, kindPool, "a", c.field, ReasonInvalidField); !p.Ignored || p.KeptLastValid {
				t.Errorf("never-valid pool problem = %+v, want Ignored", p)
			}
		})
	}
}

func TestLastGoodRecreatedObjectIsNew(t *testing.T) {
	g := NewLastGood()
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	g.Build(Input{Pools: []*v1beta1.IPAddressPool{a}})
	again := withUID(poolObj("a", 3, "198.51.100.0/28", "198.51.100.8/29"), "ua2")
	cfg, _ := g.Build(Input{Pools: []*v1beta1.IPAddressPool{again}})
	if _, in := cfg.Pools["a"]; in {
		t.Error("a deleted and recreated invalid pool kept the old object's version")
	}
}

func TestLastGoodNewPoolOverlappingOlderIsLeftOut(t *testing.T) {
	g := NewLastGood()
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	g.Build(Input{Pools: []*v1beta1.IPAddressPool{a}})
	b := withUID(poolObj("b", 2, "198.51.100.8/29"), "ub")
	cfg, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{a, b}})
	if _, in := cfg.Pools["b"]; in {
		t.Error("a new pool overlapping an older one is in force")
	}
	if p := wantProblem(t, ps, kindPool, "b", "", ReasonConflicting); !p.Ignored {
		t.Errorf("problem = %+v, want Ignored", p)
	}
	if poolRanges(cfg, "a") != "198.51.100.0/28" {
		t.Error("pool a changed")
	}
}

func TestLastGoodL2NodeSelectorTypo(t *testing.T) {
	g := NewLastGood()
	pools := []*v1beta1.IPAddressPool{withUID(poolObj("p", 1, "198.51.100.0/28"), "up")}
	adv := withUID(l2Obj("l2", "p"), "ul2")
	adv.Spec.NodeSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "a"}}}
	g.Build(Input{Pools: pools, L2Advertisements: []*v1beta1.L2Advertisement{adv}})
	typo := edit(adv, l2Meta, func(a *v1beta1.L2Advertisement) {
		a.Spec.NodeSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "zone", Operator: "in", Values: []string{"a", "b"}}}}}
	})
	cfg, ps := g.Build(Input{Pools: pools, L2Advertisements: []*v1beta1.L2Advertisement{typo}})
	if len(cfg.L2Advertisements) != 1 || !cfg.L2Advertisements[0].SelectsPool("p") ||
		!cfg.L2Advertisements[0].SelectsNode(map[string]string{"zone": "a"}) || cfg.L2Advertisements[0].SelectsNode(map[string]string{"zone": "b"}) {
		t.Fatalf("L2Advertisement in force = %+v, want the last valid version", cfg.L2Advertisements)
	}
	wantKept(t, ps, kindL2Adv, "l2", "spec.nodeSelectors[0]")
}

func TestLastGoodPeerSecretRecreated(t *testing.T) {
	g := NewLastGood()
	peer := withUID(peerObj("peer", 1, func(s *v1beta1.BGPPeerSpec) { s.PasswordSecret = "pw" }), "upeer")
	peers := []*v1beta1.BGPPeer{peer}
	cfg, ps := g.Build(Input{Peers: peers, Secrets: secretList(secretObj("pw", "one"))})
	wantNoProblems(t, ps)
	if len(cfg.Peers) != 1 || cfg.Peers[0].Password != "one" {
		t.Fatalf("peers = %+v", cfg.Peers)
	}
	// The Secret is deleted: the peer stays with its last password.
	cfg, ps = g.Build(Input{Peers: peers})
	if len(cfg.Peers) != 1 || cfg.Peers[0].Password != "one" {
		t.Fatalf("peers with the Secret missing = %+v, want the peer with its last password", cfg.Peers)
	}
	wantKept(t, ps, kindPeer, "peer", "spec.passwordSecret")
	// Still missing on the next build (the memory survives a kept build).
	if cfg, _ = g.Build(Input{Peers: peers}); len(cfg.Peers) != 1 {
		t.Fatal("the peer was dropped on the second build without its Secret")
	}
	// Recreated with a new password: the new one is in force.
	cfg, ps = g.Build(Input{Peers: peers, Secrets: secretList(secretObj("pw", "two"))})
	wantNoProblems(t, ps)
	if len(cfg.Peers) != 1 || cfg.Peers[0].Password != "two" {
		t.Fatalf("peers after the Secret came back = %+v", cfg.Peers)
	}
	// A new peer naming a missing Secret is left out.
	other := withUID(peerObj("other", 2, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.2"; s.PasswordSecret = "nope" }), "uother")
	cfg, _ = g.Build(Input{Peers: []*v1beta1.BGPPeer{peer, other}, Secrets: secretList(secretObj("pw", "two"))})
	if len(cfg.Peers) != 1 {
		t.Errorf("peers = %+v, want the new peer without its Secret left out", cfg.Peers)
	}
}

func TestLastGoodPeerEditedIntoDuplicate(t *testing.T) {
	g := NewLastGood()
	a := withUID(peerObj("a", 1, nil), "ua")
	b := withUID(peerObj("b", 2, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.2" }), "ub")
	g.Build(Input{Peers: []*v1beta1.BGPPeer{a, b}})
	// The older peer is edited onto the newer peer's address.
	dup := edit(a, peerMeta, func(p *v1beta1.BGPPeer) { p.Spec.PeerAddress = "198.51.100.2" })
	cfg, ps := g.Build(Input{Peers: []*v1beta1.BGPPeer{dup, b}})
	if len(cfg.Peers) != 2 || cfg.Peers[0].Address.String() != "198.51.100.1" {
		t.Fatalf("peers = %+v, want both, a at its last address", cfg.Peers)
	}
	wantKept(t, ps, kindPeer, "a", "spec.peerAddress")
}

func secretList(s ...*corev1.Secret) []*corev1.Secret { return s }
