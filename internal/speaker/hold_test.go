package speaker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
)

func TestHoldOf(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	at := func(d time.Duration) *metav1.MicroTime { return &metav1.MicroTime{Time: now.Add(d)} }
	hold := func(spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: heraldv1.AnnounceHoldLease,
			CreationTimestamp: metav1.Time{Time: now.Add(-time.Hour)}}, Spec: spec}
	}
	deleting := hold(coordinationv1.LeaseSpec{})
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	for _, c := range []struct {
		name  string
		lease *coordinationv1.Lease
		held  bool
		until time.Time
	}{
		{"no Lease", nil, false, time.Time{}},
		{"no duration: until deleted", hold(coordinationv1.LeaseSpec{HolderIdentity: ptr.To("migrate")}), true, time.Time{}},
		{"being deleted", deleting, false, time.Time{}},
		{"renewed, not run out", hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](60), RenewTime: at(-30 * time.Second)}), true, now.Add(30 * time.Second)},
		{"renewed, run out", hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](60), RenewTime: at(-61 * time.Second)}), false, now.Add(-time.Second)},
		{"acquired, not renewed", hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](60), AcquireTime: at(-10 * time.Second)}), true, now.Add(50 * time.Second)},
		{"duration from creation", hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](60)}), false, now.Add(-time.Hour + time.Minute)},
	} {
		h := holdOf(c.lease, now)
		if h.held != c.held || !h.until.Equal(c.until) {
			t.Errorf("%s: held %v until %v, want %v until %v", c.name, h.held, h.until, c.held, c.until)
		}
	}
}

// TestPlanHeldAnswersNothing: under the hold a node drops what it owns and
// what it is handing over at once; released, it claims its addresses again
// (so the L2 backend announces them, gratuitous ARP / unsolicited NA).
func TestPlanHeldAnswersNothing(t *testing.T) {
	l := newL2State()
	now := time.Unix(1_000_000, 0)
	o := planOptions{settled: true, now: now, grace: 2 * time.Second}
	if p := planEvery(&l, "node1", result("node1"), o); len(p.claimed) != 1 {
		t.Fatalf("claimed %v", p.claimed)
	}
	planEvery(&l, "node1", result("node2"), o) // now handing it over
	if len(l.releasing) != 1 {
		t.Fatalf("releasing %v", l.releasing)
	}
	o.held = true
	p := planEvery(&l, "node1", result("node2"), o)
	if len(p.want) != 0 || len(p.dropped) != 1 || l.announcedCount() != 0 {
		t.Fatalf("held: want %v dropped %v, %d still announced", p.want, p.dropped, l.announcedCount())
	}
	if p := planEvery(&l, "node1", result("node1"), o); len(p.want) != 0 || len(p.claimed) != 0 {
		t.Fatalf("held: owner claims %v, wants %v", p.claimed, p.want)
	}
	o.held = false
	if p := planEvery(&l, "node1", result("node1"), o); len(p.claimed) != 1 || len(p.want) != 1 {
		t.Fatalf("released: claimed %v want %v", p.claimed, p.want)
	}
}

// recordingBGP keeps the last desired BGP state (a path change patches
// it, as the backend's state is), counts the change sets of everything
// (applies) and of some prefixes (changes), and refuses them while err is
// set.
type recordingBGP struct {
	last    bgp.Desired
	applies int
	changes int
	err     error
}

func (r *recordingBGP) ApplyChange(_ context.Context, ch bgp.Change) error {
	if ch.All {
		r.last = ch.Desired
		r.applies++
		return r.err
	}
	c := ch.Paths
	r.changes++
	if r.err != nil {
		return r.err
	}
	r.last.Paths = slices.DeleteFunc(slices.Clone(r.last.Paths), func(p bgp.Path) bool { return slices.Contains(c.Prefixes, p.Prefix) })
	r.last.Paths = append(r.last.Paths, c.Paths...)
	slices.SortStableFunc(r.last.Paths, func(a, b bgp.Path) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	return nil
}
func (r *recordingBGP) Sessions() []bgp.SessionState   { return nil }
func (r *recordingBGP) Shutdown(context.Context) error { return nil }

// announcingClients are fake clientsets holding node1 and svcs, the bench
// pool, an L2 and a BGP advertisement of every pool, and one BGP peer.
func announcingClients(svcs ...*corev1.Service) (*fake.Clientset, *heraldfake.Clientset) {
	objs := []runtime.Object{benchNode(1)}
	for _, svc := range svcs {
		objs = append(objs, svc)
	}
	return fake.NewClientset(objs...), heraldfake.NewSimpleClientset(
		&heraldv1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: heraldv1.IPAddressPoolSpec{Addresses: []string{"2001:db8:f::/112"}}},
		&heraldv1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}},
		&heraldv1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}},
		&heraldv1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "router"}, Spec: heraldv1.BGPPeerSpec{PeerAddress: "198.51.100.1", PeerASN: 64512, MyASN: 64513}},
	)
}

// TestHoldLease: while the hold Lease exists the speaker answers nothing in
// L2 mode and opens no BGP session; deleting it brings both back, and a
// timed hold ends by itself.
func TestHoldLease(t *testing.T) {
	kube, herald := announcingClients(benchService(1, 1))
	now := time.Now()
	l2, routes := &nullL2{}, &recordingBGP{}
	s, _ := startedSpeaker(t, kube, herald, 1, Options{NodeName: "node1", Namespace: testNS, L2: l2, BGP: routes, Now: func() time.Time { return now }})
	s.ready.synced.Store(true)
	reconcile := func() {
		t.Helper()
		if err := s.reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	reconcile()
	if l2.n != 1 || len(routes.last.Sessions) != 1 {
		t.Fatalf("before the hold: %d L2 announcements, BGP %+v", l2.n, routes.last)
	}
	leases := kube.CoordinationV1().Leases(testNS)
	hold := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: heraldv1.AnnounceHoldLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("test")}}
	if _, err := leases.Create(context.Background(), hold, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the hold in the cache", func() bool { _, err := s.cluster.holdLeases.Get(heraldv1.AnnounceHoldLease); return err == nil })
	reconcile()
	if l2.n != 0 || len(routes.last.Sessions) != 0 || len(routes.last.Paths) != 0 {
		t.Fatalf("held: %d L2 announcements, BGP %+v", l2.n, routes.last)
	}
	if err := leases.Delete(context.Background(), heraldv1.AnnounceHoldLease, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the hold gone from the cache", func() bool { _, err := s.cluster.holdLeases.Get(heraldv1.AnnounceHoldLease); return err != nil })
	reconcile()
	if l2.n != 1 || len(routes.last.Sessions) != 1 {
		t.Fatalf("released: %d L2 announcements, BGP %+v", l2.n, routes.last)
	}

	hold.Spec.LeaseDurationSeconds = ptr.To[int32](10)
	hold.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if _, err := leases.Create(context.Background(), hold, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the timed hold in the cache", func() bool { _, err := s.cluster.holdLeases.Get(heraldv1.AnnounceHoldLease); return err == nil })
	reconcile()
	if l2.n != 0 {
		t.Fatalf("timed hold: %d L2 announcements", l2.n)
	}
	now = now.Add(11 * time.Second)
	reconcile()
	if l2.n != 1 || len(routes.last.Sessions) != 1 {
		t.Fatalf("timed hold run out: %d L2 announcements, BGP %+v", l2.n, routes.last)
	}
}

func benchNode(i int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node" + string(rune('0'+i))},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.51.100.1" + string(rune('0'+i))}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}
}

// TestBGPApplySkippedWhenNothingChanged: a reconcile in which nothing the
// BGP sessions and routes depend on changed (a member-list event, say)
// does not hand the routes to the backend again; a changed Service hands
// over its prefixes alone; after a refused hand-over, the whole desired
// state goes.
func TestBGPApplySkippedWhenNothingChanged(t *testing.T) {
	kube, herald := announcingClients(benchService(1, 2), benchService(2, 2))
	routes := &recordingBGP{}
	s, store := startedSpeaker(t, kube, herald, 2, Options{NodeName: "node1", Namespace: testNS, BGP: routes})
	s.ready.synced.Store(true)
	handOvers := func(what string, applies, changes int) {
		t.Helper()
		if err := s.reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if routes.applies != applies || routes.changes != changes {
			t.Fatalf("%s: %d Applies and %d path changes, want %d and %d", what, routes.applies, routes.changes, applies, changes)
		}
	}
	handOvers("first reconcile", 1, 0)
	if len(routes.last.Sessions) != 1 {
		t.Fatalf("no session applied: %+v", routes.last)
	}
	handOvers("nothing changed", 1, 0)
	svc := benchService(1, 2)
	svc.ResourceVersion, svc.Labels = "5", map[string]string{"rev": "5"}
	if err := store.Update(svc); err != nil {
		t.Fatal(err)
	}
	s.cluster.svcCache.touchObject(svc)
	handOvers("a Service changed", 1, 1)
	handOvers("nothing changed again", 1, 1)
	routes.err = errors.New("refused")
	s.cluster.svcCache.touchObject(svc)
	svc = svc.DeepCopy()
	svc.Labels = map[string]string{"rev": "6"}
	if err := store.Update(svc); err != nil {
		t.Fatal(err)
	}
	handOvers("a Service changed, refused", 1, 2)
	routes.err = nil
	handOvers("after a refused hand-over", 2, 2)
	handOvers("nothing changed after the retry", 2, 2)
}

// TestIncrementalBGPEqualsFull: over 300 random changes to Services
// (moved to another address, sharing one, created, deleted, relabelled),
// some taken by a reconcile under the announcement hold, what the BGP
// backend holds after path changes alone equals the whole desired state
// worked out afresh, and the Services' advertised routes (for events)
// equal those of the whole result.
func TestIncrementalBGPEqualsFull(t *testing.T) {
	var svcs []*corev1.Service
	for i := range 20 {
		svcs = append(svcs, benchService(1+i, 20))
	}
	kube, herald := announcingClients(svcs...)
	for _, svc := range svcs {
		_, err := kube.DiscoveryV1().EndpointSlices(svc.Namespace).Create(context.Background(), readySlice(svc), metav1.CreateOptions{})
		must(t, err)
	}
	routes := &recordingBGP{}
	s, store := startedSpeaker(t, kube, herald, len(svcs), Options{NodeName: "node1", Namespace: testNS, BGP: routes})
	s.ready.synced.Store(true)
	rng := rand.New(rand.NewPCG(7, 9))
	next, rev := 21, 10
	for step := range 300 {
		rev++
		switch k := rng.IntN(6); {
		case k == 0 && len(svcs) > 1:
			i := rng.IntN(len(svcs))
			must(t, store.Delete(svcs[i]))
			s.cluster.svcCache.touchObject(svcs[i])
			svcs = slices.Delete(svcs, i, i+1)
		case k == 1:
			svc := benchService(next, 0)
			next++
			must(t, store.Add(svc))
			must(t, s.cluster.sliceIndex.Add(readySlice(svc)))
			s.cluster.svcCache.touchObject(svc)
			svcs = append(svcs, svc)
		default:
			i := rng.IntN(len(svcs))
			svc := svcs[i].DeepCopy()
			svc.ResourceVersion = fmt.Sprint(rev)
			if k == 2 {
				svc.Labels = map[string]string{"rev": fmt.Sprint(rev)}
			} else {
				svc.Status = benchService(1+rng.IntN(next), 0).Status // maybe another Service's address
			}
			must(t, store.Update(svc))
			s.cluster.svcCache.touchObject(svc)
			svcs[i] = svc
		}
		if rng.IntN(10) == 0 {
			// A reconcile under the announcement hold: the changes it
			// takes never reach the memo, the next reconcile's must.
			st, _, err := s.state()
			must(t, err)
			err = s.bgp.reconcile(context.Background(), st, s.cluster.svcCache.takeChanges().asChanges(), true, false)
			must(t, err)
			if len(routes.last.Paths) != 0 {
				t.Fatalf("step %d: held, and the backend holds paths", step)
			}
		}
		must(t, s.reconcile(context.Background()))
		st, _, err := s.state()
		must(t, err)
		me, err := s.cluster.nodes.Get("node1")
		must(t, err)
		v4, v6 := nodeAddresses(me)
		want := announce.BGP(st, "node1")
		if len(want.Routes) == 0 {
			t.Fatalf("step %d: no route: the test tests nothing", step)
		}
		if got, wantPaths := routes.last.Paths, desiredBGP(want, st.Config, v4, v6).Paths; !reflect.DeepEqual(got, wantPaths) {
			t.Fatalf("step %d: the backend holds\n%+v\nwant\n%+v", step, got, wantPaths)
		}
		if got, wantAds := s.bgp.advert, advertisedRoutes(want); !reflect.DeepEqual(got, wantAds) {
			t.Fatalf("step %d: advertised routes\n%v\nwant\n%v", step, got, wantAds)
		}
	}
	if routes.changes < 200 {
		t.Errorf("%d Applies and %d path changes: after the first Apply, most changes should go alone", routes.applies, routes.changes)
	}
}

// readySlice is an EndpointSlice of svc with a ready endpoint on node1.
func readySlice(svc *corev1.Service) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To("node1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentReconcilesAreSerialised: Shutdown reconciles while the
// worker may be reconciling; the two must not overlap (the Service cache
// hands each its own slice, changed in place by the next). Run with -race.
func TestConcurrentReconcilesAreSerialised(t *testing.T) {
	kube, herald := announcingClients(benchService(1, 8), benchService(2, 8))
	s, store := startedSpeaker(t, kube, herald, 2, Options{NodeName: "node1", Namespace: testNS, L2: &nullL2{}, BGP: &recordingBGP{}})
	s.ready.synced.Store(true)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 50 {
				svc := benchService(1+(i+g)%8, 8)
				svc.ResourceVersion, svc.Labels = fmt.Sprint(10+i), map[string]string{"i": fmt.Sprint(i), "g": fmt.Sprint(g)}
				if err := store.Update(svc); err != nil {
					_ = store.Add(svc)
				}
				s.cluster.svcCache.touchObject(svc)
				if err := s.reconcile(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestOwnNodeDeletedWithdrawsBGP: when the cluster deletes this node's
// Node object while its speaker runs (its kubelet stopped), the speaker is
// no load-balancer node any more: it closes its sessions and withdraws its
// routes without failing the reconcile, and takes them up again when the
// node is registered anew.
func TestOwnNodeDeletedWithdrawsBGP(t *testing.T) {
	svc := benchService(1, 1)
	kube, herald := announcingClients(svc)
	node := benchNode(1) // with an IPv6 address: the next hop of the Service's
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::11"})
	nodes := kube.CoreV1().Nodes()
	if _, err := nodes.Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	routes := &recordingBGP{}
	s, _ := startedSpeaker(t, kube, herald, 1, Options{NodeName: "node1", Namespace: testNS, BGP: routes})
	s.ready.synced.Store(true)
	must(t, s.cluster.sliceIndex.Add(readySlice(svc)))
	s.cluster.svcCache.touchObject(svc)
	reconcile := func(what string, sessions, paths int) {
		t.Helper()
		if err := s.reconcile(context.Background()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(routes.last.Sessions) != sessions || len(routes.last.Paths) != paths {
			t.Fatalf("%s: BGP %+v, want %d sessions and %d paths", what, routes.last, sessions, paths)
		}
	}
	reconcile("registered", 1, 1)
	if err := nodes.Delete(context.Background(), "node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "node1 gone from the cache", func() bool { _, err := s.cluster.nodes.Get("node1"); return err != nil })
	reconcile("Node deleted", 0, 0)
	reconcile("Node still deleted", 0, 0)
	node.ResourceVersion = ""
	if _, err := nodes.Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "node1 back in the cache", func() bool { _, err := s.cluster.nodes.Get("node1"); return err == nil })
	reconcile("registered again", 1, 1)
}
