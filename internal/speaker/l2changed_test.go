package speaker

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/layer2"
)

// l2Pipeline is what the L2 reconciler keeps between reconciles (the
// memo, the plan's state, the times since each address is announced),
// the Service cache, and the last want handed over.
type l2Pipeline struct {
	l2Reconciler
	cache *serviceCache
	want  []layer2.Announcement
}

func newL2Pipeline(now func() time.Time) *l2Pipeline {
	return &l2Pipeline{l2Reconciler: l2Reconciler{now: now, state: newL2State(), since: map[netip.Addr]time.Time{}},
		cache: newServiceCache()}
}

// step runs one reconcile's L2 part as l2Reconciler.reconcile does (incremental
// when allowed), or always deciding and planning every address (full).
func (p *l2Pipeline) step(t *testing.T, src serviceSource, st announce.State, o planOptions, full bool) l2Plan {
	t.Helper()
	svcs, err := p.cache.services(src)
	if err != nil {
		t.Fatal(err)
	}
	st.Services = svcs
	ch := p.cache.takeChanges()
	c := ch.asChanges()
	if full || !p.state.incremental || !o.ungated() {
		c = announce.Changes{All: true}
	}
	if !o.held {
		c = p.memo.Update(st, c, p.cache.holdersIn(st.Services))
	}
	plan := p.state.plan("node1", c, &p.memo, o)
	if !plan.unchanged {
		p.want = plan.want
	}
	claimed := make([]netip.Addr, 0, len(plan.claimed))
	for _, o := range plan.claimed {
		claimed = append(claimed, o.IP)
	}
	p.noteSince(claimed, announce.Changes{All: c.All, IPs: plan.left})
	return plan
}

// TestIncrementalL2EqualsFull: over random sequences of Service and
// EndpointSlice changes, node liveness, labels and configuration changes,
// the member list settling, the hold, isolation, claim delays and time
// passing hand-over grace, the incremental reconcile (L2Memo.Update told
// what changed, and the plan and the announced-since times of those
// addresses alone when only Services changed) announces exactly what
// deciding and planning every address does: the same owned and releasing
// addresses, the same want, claims, drops and announced-since times.
func TestIncrementalL2EqualsFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := &fakeCluster{svcs: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	src := f.source()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	inc, full := newL2Pipeline(clock), newL2Pipeline(clock)
	touch := func(obj any) { inc.cache.touchObject(obj); full.cache.touchObject(obj) }
	configs := []config.Input{
		{Pools: []*v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.64/28", "2001:db8:1::/124"}}}},
			L2Advertisements: []*v1beta1.L2Advertisement{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}},
		{Pools: []*v1beta1.IPAddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.64/28", "2001:db8:1::/124"}}}},
			L2Advertisements: []*v1beta1.L2Advertisement{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1beta1.L2AdvertisementSpec{
				NodeSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "a"}}}}}}},
	}
	cfg := 0
	zones := map[string]string{"node1": "a", "node2": "a", "node3": "b"}
	dead := map[string]bool{}
	var claimFrom time.Time
	fullPlans, changedPlans := 0, 0
	for step := range 20000 {
		name := fmt.Sprintf("svc-%02d", rng.IntN(10))
		switch op := rng.IntN(40); {
		case op < 12: // create or update a Service
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			if rng.IntN(2) == 0 {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			for range 1 + rng.IntN(4) { // often several of a family: spread
				ip := fmt.Sprintf("198.51.100.%d", 64+rng.IntN(20)) // some outside the pool: uncovered
				if rng.IntN(3) == 0 {
					ip = fmt.Sprintf("2001:db8:1::%x", rng.IntN(16))
				}
				svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
			}
			if old := f.svcs["ns/"+name]; old != nil {
				touch(old)
			}
			f.svcs["ns/"+name] = svc
			touch(svc)
		case op < 16: // delete a Service
			if old := f.svcs["ns/"+name]; old != nil {
				delete(f.svcs, "ns/"+name)
				touch(old)
			}
		case op < 28: // its endpoints change
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To(fmt.Sprintf("node%d", 1+rng.IntN(3))),
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(rng.IntN(3) != 0)}}}}
			if old := f.slices[es.Name]; old != nil {
				touch(old)
			}
			f.slices[es.Name] = es
			touch(es)
		case op == 28: // a node dies or comes back
			n := fmt.Sprintf("node%d", 1+rng.IntN(3))
			dead[n] = !dead[n]
		case op == 29: // a node's labels change
			n := fmt.Sprintf("node%d", 1+rng.IntN(3))
			zones[n] = map[string]string{"a": "b", "b": "a"}[zones[n]]
		case op == 30:
			cfg = rng.IntN(len(configs))
		case op == 31: // the member list reconnects: claims wait a while
			claimFrom = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		case op == 32: // the new owner of an address being handed over announced itself
			for ip := range inc.state.releasing {
				inc.state.yielded(ip)
				full.state.yielded(ip)
				break
			}
		}
		now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		var ns []*corev1.Node
		for _, n := range []string{"node1", "node2", "node3"} {
			ns = append(ns, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": zones[n]}}})
		}
		c, problems := config.Build(configs[cfg])
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		live := map[string]bool{}
		for _, n := range []string{"node1", "node2", "node3"} {
			live[n] = !dead[n]
		}
		st := announce.State{Config: c, Nodes: ns, Live: func(n string) bool { return live[n] }}
		o := planOptions{settled: rng.IntN(100) != 0, held: rng.IntN(150) == 0, keep: rng.IntN(150) == 0,
			claimFrom: claimFrom, now: now, grace: 2 * time.Second}
		incremental := inc.state.incremental && o.ungated()
		pi := inc.step(t, src, st, o, false)
		pf := full.step(t, src, st, o, true)
		if incremental {
			changedPlans++
		} else {
			fullPlans++
		}
		if !reflect.DeepEqual(inc.state.owned, full.state.owned) && !(len(inc.state.owned) == 0 && len(full.state.owned) == 0) {
			t.Fatalf("step %d: owned\n incremental %v\n full        %v", step, inc.state.owned, full.state.owned)
		}
		if !reflect.DeepEqual(inc.state.releasing, full.state.releasing) {
			t.Fatalf("step %d: releasing differs", step)
		}
		if !reflect.DeepEqual(inc.want, full.want) && !(len(inc.want) == 0 && len(full.want) == 0) {
			t.Fatalf("step %d: want\n incremental %+v\n full        %+v", step, inc.want, full.want)
		}
		if !maps.Equal(inc.since, full.since) {
			t.Fatalf("step %d: announced since\n incremental %v\n full        %v", step, inc.since, full.since)
		}
		if !reflect.DeepEqual(pi.claimed, pf.claimed) || !reflect.DeepEqual(pi.dropped, pf.dropped) || pi.recheck != pf.recheck {
			t.Fatalf("step %d: claimed %v / %v, dropped %v / %v, recheck %v / %v (incremental / full)", step, pi.claimed, pf.claimed, pi.dropped, pf.dropped, pi.recheck, pf.recheck)
		}
	}
	t.Logf("%d incremental plans, %d full ones", changedPlans, fullPlans)
	if changedPlans < 10000 {
		t.Errorf("only %d of the plans were incremental: the test hardly exercises them", changedPlans)
	}
}

// TestPlanOfSomeReclaimsAnAddressBeingHandedOver: an address this node
// is handing over that comes back to it (its Service's endpoints moved
// back) is announced again as its own, not as releasing.
func TestPlanOfSomeReclaimsAnAddressBeingHandedOver(t *testing.T) {
	l := newL2State()
	now := time.Unix(1000, 0)
	o := planOptions{settled: true, now: now, grace: 2 * time.Second}
	planEvery(&l, "node1", result("node1"), o)
	some := announce.Changes{IPs: []netip.Addr{vip}}
	o.now = now.Add(100 * time.Millisecond)
	p := l.plan("node1", some, fixedOwners(result("node2")), o)
	if p.unchanged || len(p.want) != 1 || !p.want[0].Releasing || len(p.left) != 1 {
		t.Fatalf("lost to node2: %+v; want %s releasing", p, vip)
	}
	o.now = now.Add(200 * time.Millisecond)
	p = l.plan("node1", some, fixedOwners(result("node1")), o)
	if p.unchanged || len(p.want) != 1 || p.want[0].Releasing || len(p.claimed) != 1 {
		t.Fatalf("back to node1: %+v; want %s announced as its own and claimed", p, vip)
	}
	if _, ok := l.releasing[vip]; ok {
		t.Error("still releasing after it came back")
	}
	p = l.plan("node1", announce.Changes{}, fixedOwners(result("node1")), o)
	if !p.unchanged || p.want != nil {
		t.Errorf("nothing changed: %+v; want unchanged", p)
	}
}
