package config

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
)

// recordStatuses returns a copy of in with each object's status.inForce
// as the controller writes it after a build that gave problems: the current
// version of an object in force, else the record it had.
func recordStatuses(in Input, problems []Problem) Input {
	out := in
	out.Pools = nil
	for _, o := range in.Pools {
		c := o.DeepCopy()
		if InForceNow(problems, kindPool, o.Name) {
			c.Status.InForce = PoolInForce(o)
		}
		out.Pools = append(out.Pools, c)
	}
	out.L2Advertisements = nil
	for _, o := range in.L2Advertisements {
		c := o.DeepCopy()
		if InForceNow(problems, kindL2Adv, o.Name) {
			c.Status.InForce = L2AdvertisementInForce(o)
		}
		out.L2Advertisements = append(out.L2Advertisements, c)
	}
	out.BGPAdvertisements = nil
	for _, o := range in.BGPAdvertisements {
		c := o.DeepCopy()
		if InForceNow(problems, kindBGPAdv, o.Name) {
			c.Status.InForce = BGPAdvertisementInForce(o)
		}
		out.BGPAdvertisements = append(out.BGPAdvertisements, c)
	}
	out.Peers = nil
	for _, o := range in.Peers {
		c := o.DeepCopy()
		if InForceNow(problems, kindPeer, o.Name) {
			c.Status.InForce = PeerInForce(o)
		}
		out.Peers = append(out.Peers, c)
	}
	return out
}

// sameBuild fails unless two builds gave the same Config and problems
// (problems compared in a total order: LastGood orders those of one field
// only by kind, name and field).
func sameBuild(t *testing.T, what string, cfgA, cfgB *Config, psA, psB []Problem) {
	t.Helper()
	if !reflect.DeepEqual(cfgA, cfgB) {
		t.Fatalf("%s: configurations differ:\nrunning: %s\nfresh:   %s", what, describe(cfgA), describe(cfgB))
	}
	if a, b := problemKeys(psA), problemKeys(psB); !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: problems differ:\nrunning: %v\nfresh:   %v", what, a, b)
	}
}

func problemKeys(ps []Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s ignored=%t kept=%t reason=%s with=%s", p.Error(), p.Ignored, p.KeptLastValid, p.Reason, p.ConflictsWith))
	}
	sort.Strings(out)
	return out
}

func describe(c *Config) string {
	s := ""
	for _, n := range c.PoolNames() {
		s += fmt.Sprintf("pool %s=%s; ", n, poolRanges(c, n))
	}
	for _, a := range c.L2Advertisements {
		s += fmt.Sprintf("l2 %s pools=%v; ", a.Name, a.Pools)
	}
	for _, a := range c.BGPAdvertisements {
		s += fmt.Sprintf("bgp %s pools=%v; ", a.Name, a.Pools)
	}
	for _, p := range c.Peers {
		s += fmt.Sprintf("peer %s %s; ", p.Name, p.Address)
	}
	return s
}

// The example: an older pool is edited to overlap a newer pool in
// use. The running process keeps both; a process started during the bad
// edit keeps both too, from the records, where without them it would give
// the addresses to the older pool and leave the newer out.
func TestLastGoodRestartDuringOverlapKeepsBothPools(t *testing.T) {
	running := NewLastGood()
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	b := withUID(poolObj("b", 2, "198.51.100.16/28"), "ub")
	in := Input{Pools: []*v1beta1.IPAddressPool{a, b}}
	_, ps := running.Build(in)
	in = recordStatuses(in, ps)
	grown := edit(in.Pools[0], poolMeta, func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.0/27"} })
	in.Pools[0] = grown
	cfgRun, psRun := running.Build(in)
	in = recordStatuses(in, psRun)
	if got := grown.Status.InForce.Generation; got != 1 {
		t.Fatalf("pool a's record is at generation %d, want 1 (the refused edit is not recorded)", got)
	}

	cfgFresh, psFresh := NewLastGood().Build(in)
	sameBuild(t, "restarted during the overlap", cfgRun, cfgFresh, psRun, psFresh)
	if poolRanges(cfgFresh, "a") != "198.51.100.0/28" || poolRanges(cfgFresh, "b") != "198.51.100.16/28" {
		t.Fatalf("fresh process: %s, want a at its last valid range and b untouched", describe(cfgFresh))
	}
	wantKept(t, psFresh, kindPool, "a", "spec.addresses")

	// Without records (the statuses wiped), a fresh process decides from
	// the objects alone: the older pool wins and the newer one is out.
	bare := Input{Pools: []*v1beta1.IPAddressPool{grown.DeepCopy(), b.DeepCopy()}}
	for _, p := range bare.Pools {
		p.Status.InForce = nil
	}
	cfgBare, _ := NewLastGood().Build(bare)
	if _, in := cfgBare.Pools["b"]; in || poolRanges(cfgBare, "a") != "198.51.100.0/27" {
		t.Fatalf("without records: %s, want a grown and b left out (what the records prevent)", describe(cfgBare))
	}
}

// A record names the object it was written for: an object deleted and
// created again under the same name, carrying an old record (restored from
// a backup with its status), is not seeded from it.
func TestLastGoodRecordOfOtherObjectIgnored(t *testing.T) {
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	old := PoolInForce(a)
	again := withUID(poolObj("a", 3, "198.51.100.0/28", "198.51.100.8/29"), "ua2") // overlapping ranges: invalid
	again.Generation = 2
	again.Status.InForce = old
	cfg, ps := NewLastGood().Build(Input{Pools: []*v1beta1.IPAddressPool{again}})
	if _, in := cfg.Pools["a"]; in {
		t.Fatal("a recreated invalid pool was put in force from the old object's record")
	}
	if p := wantProblem(t, ps, kindPool, "a", "", ReasonInvalidField); !p.Ignored || p.KeptLastValid {
		t.Errorf("problem = %+v, want Ignored", p)
	}
	// With its own UID the same record is used.
	again.Status.InForce.UID = again.UID
	if cfg, _ = NewLastGood().Build(Input{Pools: []*v1beta1.IPAddressPool{again}}); poolRanges(cfg, "a") != "198.51.100.0/28" {
		t.Fatalf("pool a = %s, want the recorded version", poolRanges(cfg, "a"))
	}
}

// A running process that missed a version the controller saw valid (two
// edits between its events) takes the newer recorded version as its last
// valid one, so it keeps what the others keep.
func TestLastGoodNewerRecordWinsOverMemory(t *testing.T) {
	g := NewLastGood()
	a := withUID(poolObj("a", 1, "198.51.100.0/28"), "ua")
	g.Build(Input{Pools: []*v1beta1.IPAddressPool{a}})
	v2 := edit(a, poolMeta, func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/28"} })
	rec := PoolInForce(v2)
	v3 := edit(v2, poolMeta, func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"bogus"} })
	v3.Status.InForce = rec
	cfg, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{v3}})
	if got := poolRanges(cfg, "a"); got != "198.51.100.64/28" {
		t.Fatalf("pool a = %s, want the recorded generation 2", got)
	}
	wantKept(t, ps, kindPool, "a", "spec.addresses[0]")
}

// A peer's record holds the name of its password Secret, not the password:
// a process that starts while the Secret is missing leaves the peer out
// (its session stays down on that node) until the Secret is back, where a
// running process keeps the password it read.
func TestLastGoodRestartWithPeerSecretMissing(t *testing.T) {
	peer := withUID(peerObj("peer", 1, func(s *v1beta1.BGPPeerSpec) { s.PasswordSecret = "pw" }), "upeer")
	in := Input{Peers: []*v1beta1.BGPPeer{peer}, Secrets: secretList(secretObj("pw", "one"))}
	_, ps := NewLastGood().Build(in)
	in = recordStatuses(in, ps)
	rec := in.Peers[0].Status.InForce
	if rec == nil || rec.Spec.PasswordSecret != "pw" || rec.Spec.Password != "" {
		t.Fatalf("record = %+v, want the Secret's name and no password", rec)
	}
	in.Secrets = nil
	cfg, ps := NewLastGood().Build(in)
	if len(cfg.Peers) != 0 {
		t.Fatalf("peers = %+v, want the peer left out by a process that never read its password", cfg.Peers)
	}
	if p := wantProblem(t, ps, kindPeer, "peer", "spec.passwordSecret", ReasonSecretNotFound); !p.Ignored {
		t.Errorf("problem = %+v, want Ignored", p)
	}
}

// The property: at every step of a sequence of edits (valid and invalid,
// deletions, objects created again), a process started at that step, or
// at any earlier step and running since, builds exactly what the process
// that ran through all of them builds, given the records the controller
// wrote. Password Secrets stay put (their content is not recorded).
func TestLastGoodFreshEqualsRunning(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		checkRestartEquivalence(t, rand.New(rand.NewSource(seed)).Intn, 40)
	}
}

// FuzzLastGoodFreshEqualsRunning drives the same property with the fuzzer's
// bytes as the choices.
func FuzzLastGoodFreshEqualsRunning(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5})
	f.Fuzz(func(t *testing.T, choices []byte) {
		i := 0
		next := func(n int) int {
			if i >= len(choices) {
				return 0
			}
			i++
			return int(choices[i-1]) % n
		}
		checkRestartEquivalence(t, next, len(choices)/3+1)
	})
}

func checkRestartEquivalence(t *testing.T, choose func(int) int, steps int) {
	t.Helper()
	w := &world{choose: choose}
	running := NewLastGood()
	var restarted *LastGood // started at some step and running since
	var script []string
	for step := 0; step < steps; step++ {
		script = append(script, w.change())
		in := w.input()
		cfg, ps := running.Build(in)
		if restarted == nil && choose(4) == 0 {
			restarted = NewLastGood()
		}
		what := fmt.Sprintf("after %v", script)
		cfgFresh, psFresh := NewLastGood().Build(in)
		sameBuild(t, what+" (started now)", cfg, cfgFresh, ps, psFresh)
		if restarted != nil {
			cfgR, psR := restarted.Build(in)
			sameBuild(t, what+" (started earlier)", cfg, cfgR, ps, psR)
		}
		w.record(ps)
	}
}

// world is the API server's objects through a sequence of edits.
type world struct {
	choose func(int) int
	uids   int
	pools  map[string]*v1beta1.IPAddressPool
	l2     map[string]*v1beta1.L2Advertisement
	bgp    map[string]*v1beta1.BGPAdvertisement
	peers  map[string]*v1beta1.BGPPeer
}

var (
	worldRanges = []string{"198.51.100.0/28", "198.51.100.16/28", "198.51.100.0/27", "198.51.100.8/29",
		"198.51.100.64/28", "2001:db8::/120", "2001:db8::ff-2001:db8::10", "bogus"}
	worldPools   = []string{"p0", "p1", "p2"}
	worldAdverts = []string{"a0", "a1"}
	worldPeers   = []string{"r0", "r1"}
	worldAddrs   = []string{"198.51.100.1", "198.51.100.2", "2001:db8::1", "bad"}
	worldLabels  = []string{"", "red", "blue"}
)

func (w *world) pick(list []string) string { return list[w.choose(len(list))] }

func (w *world) newMeta(name string) metav1.ObjectMeta {
	w.uids++
	m := meta(name, w.uids)
	m.UID, m.Generation = types.UID(fmt.Sprintf("u%d", w.uids)), 1
	return m
}

// change makes one edit (create, edit, delete) and describes it.
func (w *world) change() string {
	if w.pools == nil {
		w.pools, w.l2, w.bgp, w.peers = map[string]*v1beta1.IPAddressPool{}, map[string]*v1beta1.L2Advertisement{}, map[string]*v1beta1.BGPAdvertisement{}, map[string]*v1beta1.BGPPeer{}
	}
	switch w.choose(4) {
	case 0:
		name := w.pick(worldPools)
		return "pool " + name + " " + changeObj(w, w.pools, name, func(p *v1beta1.IPAddressPool) *metav1.ObjectMeta { return &p.ObjectMeta },
			func() *v1beta1.IPAddressPool { return &v1beta1.IPAddressPool{ObjectMeta: w.newMeta(name)} },
			func(p *v1beta1.IPAddressPool) {
				p.Spec.Addresses = []string{w.pick(worldRanges)}
				if w.choose(3) == 0 {
					p.Spec.Addresses = append(p.Spec.Addresses, w.pick(worldRanges))
				}
				if l := w.pick(worldLabels); l != "" {
					p.Labels = map[string]string{"color": l}
				} else {
					p.Labels = nil
				}
			})
	case 1:
		name := w.pick(worldAdverts)
		return "l2 " + name + " " + changeObj(w, w.l2, name, func(a *v1beta1.L2Advertisement) *metav1.ObjectMeta { return &a.ObjectMeta },
			func() *v1beta1.L2Advertisement { return &v1beta1.L2Advertisement{ObjectMeta: w.newMeta(name)} },
			func(a *v1beta1.L2Advertisement) {
				a.Spec = v1beta1.L2AdvertisementSpec{}
				w.selectPools(&a.Spec.IPAddressPools, &a.Spec.IPAddressPoolSelectors)
			})
	case 2:
		name := w.pick(worldAdverts)
		return "bgp " + name + " " + changeObj(w, w.bgp, name, func(a *v1beta1.BGPAdvertisement) *metav1.ObjectMeta { return &a.ObjectMeta },
			func() *v1beta1.BGPAdvertisement { return &v1beta1.BGPAdvertisement{ObjectMeta: w.newMeta(name)} },
			func(a *v1beta1.BGPAdvertisement) {
				a.Spec = v1beta1.BGPAdvertisementSpec{}
				w.selectPools(&a.Spec.IPAddressPools, &a.Spec.IPAddressPoolSelectors)
				if w.choose(2) == 0 {
					a.Spec.Peers = []string{w.pick(worldPeers)}
				}
				if w.choose(3) == 0 {
					a.Spec.AggregationLength = ptr(int32(w.choose(33)))
				}
			})
	default:
		name := w.pick(worldPeers)
		return "peer " + name + " " + changeObj(w, w.peers, name, func(p *v1beta1.BGPPeer) *metav1.ObjectMeta { return &p.ObjectMeta },
			func() *v1beta1.BGPPeer { return &v1beta1.BGPPeer{ObjectMeta: w.newMeta(name)} },
			func(p *v1beta1.BGPPeer) {
				p.Spec = v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerPort: 179, PeerAddress: w.pick(worldAddrs)}
				if w.choose(3) == 0 {
					p.Spec.PasswordSecret = w.pick([]string{"pw", "missing"})
				}
			})
	}
}

func (w *world) selectPools(names *[]string, sels *[]metav1.LabelSelector) {
	switch w.choose(4) {
	case 0:
		*names = []string{w.pick(worldPools)}
	case 1:
		*sels = []metav1.LabelSelector{{MatchLabels: map[string]string{"color": w.pick(worldLabels[1:])}}}
	case 2:
		*sels = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "color", Operator: "bogus"}}}}
	}
}

// changeObj creates, edits, deletes or deletes and creates again the
// object called name.
func changeObj[T interface{ DeepCopy() T }](w *world, objs map[string]T, name string, metaOf func(T) *metav1.ObjectMeta, create func() T, mutate func(T)) string {
	cur, exists := objs[name]
	switch op := w.choose(6); {
	case !exists || op == 0:
		o := create()
		mutate(o)
		objs[name] = o
		return "created"
	case op == 1:
		delete(objs, name)
		return "deleted"
	default:
		c := cur.DeepCopy()
		metaOf(c).Generation++
		mutate(c)
		objs[name] = c
		return "edited"
	}
}

func (w *world) input() Input {
	in := Input{Secrets: []*corev1.Secret{secretObj("pw", "one")}}
	for _, n := range sortedKeys(w.pools) {
		in.Pools = append(in.Pools, w.pools[n])
	}
	for _, n := range sortedKeys(w.l2) {
		in.L2Advertisements = append(in.L2Advertisements, w.l2[n])
	}
	for _, n := range sortedKeys(w.bgp) {
		in.BGPAdvertisements = append(in.BGPAdvertisements, w.bgp[n])
	}
	for _, n := range sortedKeys(w.peers) {
		in.Peers = append(in.Peers, w.peers[n])
	}
	return in
}

// record writes the statuses as the controller does after a build.
func (w *world) record(ps []Problem) {
	in := recordStatuses(w.input(), ps)
	for _, o := range in.Pools {
		w.pools[o.Name] = o
	}
	for _, o := range in.L2Advertisements {
		w.l2[o.Name] = o
	}
	for _, o := range in.BGPAdvertisements {
		w.bgp[o.Name] = o
	}
	for _, o := range in.Peers {
		w.peers[o.Name] = o
	}
}
