package speaker

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/members"
)

// fakeMembers is a member list whose states the test sets.
type fakeMembers struct {
	states  map[string]members.State
	settled bool
}

func (f *fakeMembers) State(n string) members.State { return f.states[n] }
func (f *fakeMembers) Settled() bool                { return f.settled }
func (f *fakeMembers) Join([]string)                {}
func (f *fakeMembers) Retain([]string)              {}
func (f *fakeMembers) Leave(context.Context) error  { return nil }

const testNS = "herald-system"

// livenessSpeaker is a synced speaker on node1 with a fake clock, a fake
// API holding the given Leases, and ml as its member list (nil: none).
func livenessSpeaker(t *testing.T, now *time.Time, ml Liveness, leases ...*coordinationv1.Lease) (*Speaker, *fake.Clientset) {
	t.Helper()
	kube := fake.NewClientset()
	for _, l := range leases {
		if _, err := kube.CoordinationV1().Leases(testNS).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(leantest.FromClientsets(kube, heraldfake.NewClientset(), testNS), Options{NodeName: "node1", Namespace: testNS, Members: ml, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	s.ready.synced.Store(true)
	return s, kube
}

func lease(node string, renewed time.Time, secs int32) *coordinationv1.Lease {
	rt := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName(node), Namespace: testNS, Labels: map[string]string{leaseLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, RenewTime: &rt, LeaseDurationSeconds: &secs},
	}
}

func nodeList(names ...string) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range names {
		out = append(out, node(n, ""))
	}
	return out
}

// TestLiveNeverAliveBecauseNeverHeardOf: a node the member list has not
// seen is alive only while its Lease is fresh; before its Lease was read,
// or without one, it is not.
func TestLiveNeverAliveBecauseNeverHeardOf(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &fakeMembers{settled: true, states: map[string]members.State{"node2": members.Alive}}
	s, _ := livenessSpeaker(t, &now, ml, lease("node3", now.Add(-5*time.Second), 15), lease("node4", now.Add(-20*time.Second), 15))
	nodes := nodeList("node1", "node2", "node3", "node4", "node5")
	s.liveness.observe(nodes)
	if s.liveness.live("node3") {
		t.Error("node3 alive before its Lease was read")
	}
	s.liveness.leases.poll(context.Background())
	for n, want := range map[string]bool{"node1": true, "node2": true, "node3": true, "node4": false, "node5": false} {
		if got := s.liveness.live(n); got != want {
			t.Errorf("%s: live=%v, want %v", n, got, want)
		}
	}
	now = now.Add(11 * time.Second) // node3's Lease expires
	if s.liveness.live("node3") {
		t.Error("node3 alive after its Lease expired")
	}
}

// TestLiveWithoutMemberList: the Leases alone decide.
func TestLiveWithoutMemberList(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, _ := livenessSpeaker(t, &now, nil, lease("node2", now, 15))
	s.liveness.observe(nodeList("node1", "node2", "node3"))
	s.liveness.leases.poll(context.Background())
	if !s.liveness.live("node2") || s.liveness.live("node3") {
		t.Errorf("node2 %v (fresh Lease), node3 %v (none)", s.liveness.live("node2"), s.liveness.live("node3"))
	}
}

// TestLiveDeadAndIsolated: a member seen dead is down although its Lease
// is fresh, unless this node sees no other member alive: then it is up
// until its Lease is read, and afterwards only once the Lease was renewed
// since. A member that left is down whatever its Lease says.
func TestLiveDeadAndIsolated(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &fakeMembers{settled: true, states: map[string]members.State{"node2": members.Dead, "node3": members.Alive, "node4": members.Left}}
	s, kube := livenessSpeaker(t, &now, ml, lease("node2", now, 15), lease("node4", now, 15))
	nodes := nodeList("node1", "node2", "node3", "node4")
	if s.liveness.observe(nodes) {
		t.Fatal("isolated while node3 is alive")
	}
	s.liveness.leases.poll(context.Background())
	if s.liveness.live("node2") || s.liveness.live("node4") {
		t.Error("a dead or left member alive while others are reachable")
	}
	ml.states["node3"] = members.Dead // cut off from everyone
	if !s.liveness.observe(nodes) {
		t.Fatal("not isolated with every other member dead")
	}
	// Before their Leases are read, the dead members keep their
	// addresses: an isolated node never claims every address.
	if !s.liveness.live("node2") || !s.liveness.live("node3") || s.liveness.live("node4") {
		t.Errorf("isolated, Leases not read yet: node2 %v, node3 %v (both want up), node4 (left) %v", s.liveness.live("node2"), s.liveness.live("node3"), s.liveness.live("node4"))
	}
	s.liveness.leases.poll(context.Background())
	// Read once, a fresh Lease does not tell a speaker that died a moment
	// ago from one on the other side of a partition: down until renewed.
	if s.liveness.live("node2") || s.liveness.live("node3") || s.liveness.live("node4") {
		t.Errorf("isolated, Leases read once: node2 (fresh, not renewed since) %v, node3 (none) %v, node4 (left) %v", s.liveness.live("node2"), s.liveness.live("node3"), s.liveness.live("node4"))
	}
	s.liveness.leases.poll(context.Background()) // read again, unchanged
	if s.liveness.live("node2") {
		t.Error("isolated: node2 up although its Lease was not renewed")
	}
	now = now.Add(DefaultLeaseRenew)
	if _, err := kube.CoordinationV1().Leases(testNS).Update(context.Background(), lease("node2", now, 15), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !s.liveness.leases.poll(context.Background()) {
		t.Error("a renewal seen is not reported as a change")
	}
	if !s.liveness.live("node2") || s.liveness.live("node3") || s.liveness.live("node4") {
		t.Errorf("isolated, node2 renewed: node2 %v, node3 (none) %v, node4 (left) %v", s.liveness.live("node2"), s.liveness.live("node3"), s.liveness.live("node4"))
	}
	now = now.Add(16 * time.Second) // renewed once, then stopped: expires
	if s.liveness.live("node2") {
		t.Error("isolated: node2 up after its renewed Lease expired")
	}
	ml.states["node3"] = members.Alive // the partition heals
	before := time.Now()
	if s.liveness.observe(nodes) {
		t.Fatal("isolated with node3 alive again")
	}
	if from := time.Unix(0, s.liveness.claimFrom.Load()); from.Before(before.Add(healSettle)) {
		t.Errorf("healed: claims allowed from %v, want no new claim for %v", from, healSettle)
	}
}

// TestLiveAloneAfterTheLastMemberLeft: node3 died while node2 was alive;
// then node2 leaves gracefully (its speaker restarts). node1 heard it go,
// so it is not cut off: node3 stays down although its Lease is fresh (its
// speaker crashloops), and node1 keeps node3's addresses. Had node2 died
// instead, node1 could be the one cut off: isolated.
func TestLiveAloneAfterTheLastMemberLeft(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &fakeMembers{settled: true, states: map[string]members.State{"node2": members.Alive, "node3": members.Dead}}
	s, _ := livenessSpeaker(t, &now, ml, lease("node2", now, 15), lease("node3", now, 15))
	nodes := nodeList("node1", "node2", "node3")
	if s.liveness.observe(nodes) {
		t.Fatal("isolated while node2 is alive")
	}
	ml.states["node2"] = members.Left
	if s.liveness.observe(nodes) {
		t.Fatal("isolated after node2 left gracefully")
	}
	s.liveness.leases.poll(context.Background())
	if s.liveness.live("node2") || s.liveness.live("node3") {
		t.Errorf("node2 (left) %v, node3 (dead, fresh Lease) %v: want both down", s.liveness.live("node2"), s.liveness.live("node3"))
	}
	if s.liveness.observe(nodes) {
		t.Fatal("isolated at the next reconcile, with nothing changed")
	}
	ml.states["node2"] = members.Alive // back after its restart
	if s.liveness.observe(nodes) || !s.liveness.live("node2") || s.liveness.live("node3") {
		t.Errorf("node2 back: node2 %v, node3 %v", s.liveness.live("node2"), s.liveness.live("node3"))
	}
	ml.states["node2"] = members.Dead // now it dies: this node may be the one cut off
	if !s.liveness.observe(nodes) {
		t.Error("not isolated after the last live member died")
	}
}

// TestIsolatedStaleLeaseReadIsAChange: cut off from every other member,
// node1 keeps a dead member up until its Lease is read; a first read that
// finds the Lease already stale turns it down, and must be reported as a
// change so that its addresses are reconciled at once rather than when
// its Node turns NotReady.
func TestIsolatedStaleLeaseReadIsAChange(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &fakeMembers{settled: true, states: map[string]members.State{"node2": members.Dead}}
	s, _ := livenessSpeaker(t, &now, ml, lease("node2", now.Add(-20*time.Second), 15))
	if !s.liveness.observe(nodeList("node1", "node2")) {
		t.Fatal("not isolated with the only other member dead")
	}
	if !s.liveness.live("node2") {
		t.Fatal("isolated: node2 down before its Lease was read")
	}
	if !s.liveness.leases.poll(context.Background()) {
		t.Error("a first read that turns node2 down is not reported as a change")
	}
	if s.liveness.live("node2") {
		t.Error("isolated: node2 up after its stale Lease was read")
	}
	if s.liveness.leases.poll(context.Background()) {
		t.Error("a second read that changes nothing is reported as a change")
	}
}

// TestLiveSelfOnlyOnceSynced: this node counts itself alive only once its
// caches synced, and not while leaving.
func TestLiveSelfOnlyOnceSynced(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, _ := livenessSpeaker(t, &now, nil)
	s.ready.synced.Store(false)
	if s.liveness.live("node1") {
		t.Error("alive before syncing")
	}
	s.ready.synced.Store(true)
	s.leaving.Store(true)
	if s.liveness.live("node1") {
		t.Error("alive while leaving")
	}
}

// TestLeaseRenewerWritesOncePerRenewal measures the API cost of the
// liveness Lease: a Get and a Create at start, then exactly one Update per
// renewal (12 a minute per node at the default 5 s).
func TestLeaseRenewerWritesOncePerRenewal(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, kube := livenessSpeaker(t, &now, nil)
	kube.ClearActions()
	const renewals = 12
	for range renewals {
		now = now.Add(DefaultLeaseRenew)
		if err := s.liveness.renewer.renew(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	verbs := map[string]int{}
	for _, a := range kube.Actions() {
		verbs[a.GetVerb()]++
	}
	if verbs["get"] != 1 || verbs["create"] != 1 || verbs["update"] != renewals-1 || len(kube.Actions()) != renewals+1 {
		t.Errorf("actions for %d renewals: %v", renewals, verbs)
	}
	l, err := kube.CoordinationV1().Leases(testNS).Get(context.Background(), LeaseName("node1"), metav1.GetOptions{})
	if err != nil || !k8s.LeaseFresh(l, now) || k8s.LeaseFresh(l, now.Add(3*DefaultLeaseRenew)) || *l.Spec.HolderIdentity != "node1" {
		t.Errorf("Lease %+v, %v", l, err)
	}
	if err := s.liveness.renewer.release(context.Background()); err != nil {
		t.Fatal(err)
	}
	writes := verbs["create"] + verbs["update"]
	t.Logf("%d writes for %d renewals: %d writes a minute per node at %s (3 nodes: %d, 1,000 nodes: %d)",
		writes, renewals, int(time.Minute/DefaultLeaseRenew), DefaultLeaseRenew, 3*int(time.Minute/DefaultLeaseRenew), 1000*int(time.Minute/DefaultLeaseRenew))
}

// TestLeaseBookReadsLeasesByName: with more Leases wanted than it reads
// one at a time, the book lists them and takes each Lease for the node
// its name says, not the node its holderIdentity names. A node may write
// only its own Lease (the admission policy herald-speaker-node-
// restriction), so a Lease node3 writes with node2's identity does not
// make node2 alive.
func TestLeaseBookReadsLeasesByName(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	forged := lease("node3", now, 15)
	forged.Spec.HolderIdentity = ptr.To("node2")
	var names []string
	leases := []*coordinationv1.Lease{forged}
	for i := range listAbove + 1 {
		n := fmt.Sprintf("other%d", i)
		names = append(names, n)
		leases = append(leases, lease(n, now, 15))
	}
	s, _ := livenessSpeaker(t, &now, nil, leases...)
	s.liveness.leases.want(append(names, "node2", "node3"))
	s.liveness.leases.poll(context.Background())
	if s.liveness.leases.alive("node2") {
		t.Error("node2 alive by a Lease node3 wrote with node2's identity")
	}
	if !s.liveness.leases.alive("node3") || !s.liveness.leases.alive("other0") {
		t.Errorf("node3 %v, other0 %v: want both alive by their own Leases", s.liveness.leases.alive("node3"), s.liveness.leases.alive("other0"))
	}
}
