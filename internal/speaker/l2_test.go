package speaker

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
	"github.com/herald-lb/herald/internal/layer2"
)

var vip = netip.MustParseAddr("198.51.100.70")

func result(owner string) announce.L2Result {
	if owner == "" {
		return announce.L2Result{}
	}
	return announce.L2Result{Owners: []announce.L2Owner{{IP: vip, Node: owner, Services: []string{"ns/web"}}}}
}

// fixedOwners are the decisions of one L2Result, as a plan reads them.
type fixedOwners announce.L2Result

func (f fixedOwners) Owner(ip netip.Addr) (announce.L2Owner, bool) { return ownerOf(f.Owners, ip) }
func (f fixedOwners) Result() announce.L2Result                    { return announce.L2Result(f) }

// planEvery is l.plan of every address, owned as res says.
func planEvery(l *l2State, me string, res announce.L2Result, o planOptions) l2Plan {
	return l.plan(me, announce.Changes{All: true}, fixedOwners(res), o)
}

func wantAnnouncements(t *testing.T, got []layer2.Announcement, releasing ...bool) {
	t.Helper()
	if len(got) != len(releasing) {
		t.Fatalf("announcements %+v, want %d", got, len(releasing))
	}
	for i, r := range releasing {
		if got[i].Releasing != r {
			t.Errorf("announcement %d: %+v, want releasing=%v", i, got[i], r)
		}
	}
}

func TestPlanClaimsOnlyOnceSettled(t *testing.T) {
	l := newL2State()
	now := time.Unix(1000, 0)
	p := planEvery(&l, "node1", result("node1"), planOptions{settled: false, now: now, grace: 2 * time.Second})
	wantAnnouncements(t, p.want)
	p = planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: now, grace: 2 * time.Second})
	wantAnnouncements(t, p.want, false)
	if len(p.claimed) != 1 {
		t.Errorf("claimed %v", p.claimed)
	}
	p = planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: now, grace: 2 * time.Second})
	if len(p.claimed) != 0 {
		t.Error("claimed twice")
	}
}

func TestPlanMakeBeforeBreak(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: t0, grace: 2 * time.Second})
	// node2 becomes the owner: keep answering, as releasing
	p := planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0.Add(10 * time.Millisecond), grace: 2 * time.Second})
	wantAnnouncements(t, p.want, true)
	if p.recheck != t0.Add(10*time.Millisecond+2*time.Second) {
		t.Errorf("recheck %v", p.recheck)
	}
	// node2's gratuitous ARP seen: stop at once
	l.yielded(vip)
	p = planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0.Add(20 * time.Millisecond), grace: 2 * time.Second})
	wantAnnouncements(t, p.want)
	if len(p.dropped) != 1 || l.announcedCount() != 0 {
		t.Errorf("dropped %v, count %d", p.dropped, l.announcedCount())
	}
}

func TestPlanGraceEndsRelease(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: t0, grace: time.Second})
	planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0, grace: time.Second})
	p := planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0.Add(999 * time.Millisecond), grace: time.Second})
	wantAnnouncements(t, p.want, true)
	p = planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0.Add(time.Second), grace: time.Second})
	wantAnnouncements(t, p.want)
}

func TestPlanNoNewOwnerStopsAtOnce(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: t0, grace: time.Second})
	p := planEvery(&l, "node1", result(""), planOptions{settled: true, now: t0, grace: time.Second}) // Service deleted, or nobody eligible
	wantAnnouncements(t, p.want)
}

func TestPlanOwnershipComesBackWhileReleasing(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: t0, grace: time.Second})
	planEvery(&l, "node1", result("node2"), planOptions{settled: true, now: t0, grace: time.Second})
	p := planEvery(&l, "node1", result("node1"), planOptions{settled: true, now: t0.Add(time.Millisecond), grace: time.Second})
	wantAnnouncements(t, p.want, false)
	if len(p.claimed) != 1 {
		t.Error("a returning address must be claimed again (gratuitous burst)")
	}
}

// TestPlanKeepWhileIsolated: a node cut off from every other member keeps
// the addresses it announced before, even where the decision (from the
// Leases) names another node, and claims only what the decision gives it.
func TestPlanKeepWhileIsolated(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	other := netip.MustParseAddr("198.51.100.71")
	both := func(a, b string) announce.L2Result {
		return announce.L2Result{Owners: []announce.L2Owner{
			{IP: vip, Node: a, Interfaces: []string{"eth" + a[len(a)-1:]}, Services: []string{"ns/web"}},
			{IP: other, Node: b, Services: []string{"ns/api"}}}}
	}
	p := planEvery(&l, "node1", both("node1", "node2"), planOptions{settled: true, now: t0, grace: time.Second})
	wantAnnouncements(t, p.want, false)
	p = planEvery(&l, "node1", both("node2", "node2"), planOptions{settled: true, keep: true, now: t0, grace: time.Second})
	wantAnnouncements(t, p.want, false)
	if p.want[0].IP != vip || !slices.Equal(p.want[0].Interfaces, []string{"eth1"}) || len(p.claimed) != 0 {
		t.Errorf("isolated: %+v, claimed %v; want %s kept on its interfaces, nothing claimed", p.want, p.claimed, vip)
	}
	p = planEvery(&l, "node1", both("node2", "node2"), planOptions{settled: true, now: t0, grace: time.Second})
	wantAnnouncements(t, p.want, true) // reachable again: handed over
}

// TestPlanClaimFrom: before claimFrom nothing new is claimed (the decision
// is recomputed then: recheck), what is owned is kept, an address being
// handed over is claimed back, and handing over is not delayed.
func TestPlanClaimFrom(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	other := netip.MustParseAddr("198.51.100.71")
	owners := func(a, b string) announce.L2Result {
		return announce.L2Result{Owners: []announce.L2Owner{{IP: vip, Node: a}, {IP: other, Node: b}}}
	}
	planEvery(&l, "node1", owners("node1", "node2"), planOptions{settled: true, now: t0, grace: time.Second})
	from := t0.Add(200 * time.Millisecond)
	p := planEvery(&l, "node1", owners("node1", "node1"), planOptions{settled: true, claimFrom: from, now: t0, grace: time.Second})
	if len(p.want) != 1 || p.want[0].IP != vip || len(p.claimed) != 0 || p.recheck != from {
		t.Errorf("before claimFrom: want %+v, claimed %v, recheck %v; want %s kept, nothing claimed, recheck at %v", p.want, p.claimed, p.recheck, vip, from)
	}
	p = planEvery(&l, "node1", owners("node2", "node1"), planOptions{settled: true, claimFrom: from, now: t0, grace: time.Second})
	wantAnnouncements(t, p.want, true) // vip handed over at once, other not claimed yet
	p = planEvery(&l, "node1", owners("node1", "node1"), planOptions{settled: true, claimFrom: from, now: t0.Add(time.Millisecond), grace: time.Second})
	if len(p.claimed) != 1 || p.claimed[0].IP != vip {
		t.Errorf("an address being handed over must be claimed back at once: claimed %v", p.claimed)
	}
	p = planEvery(&l, "node1", owners("node1", "node1"), planOptions{settled: true, claimFrom: from, now: from, grace: time.Second})
	if len(p.claimed) != 1 || p.claimed[0].IP != other {
		t.Errorf("from claimFrom on: claimed %v, want %s", p.claimed, other)
	}
}

// TestPlanWantIsWhatTheNodeAnswers: over random sequences of decisions
// (owners moving between three nodes, addresses appearing and going, the
// time passing the hand-over grace or not), every plan's want lists each
// owned address once and each address being handed over once, marked
// releasing, in address order, and nothing else.
func TestPlanWantIsWhatTheNodeAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nodes := []string{"node1", "node2", "node3", ""} // "": no owner
	l := newL2State()
	now := time.Unix(1000, 0)
	for step := range 2000 {
		var res announce.L2Result
		for i := range 64 {
			if rng.IntN(8) == 0 {
				continue // the address is gone
			}
			ip := netip.AddrFrom4([4]byte{198, 51, 100, byte(64 + i)})
			res.Owners = append(res.Owners, announce.L2Owner{IP: ip, Node: nodes[rng.IntN(len(nodes))], Services: []string{"ns/svc"}})
		}
		now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if rng.IntN(10) == 0 {
			for ip := range l.releasing {
				l.yielded(ip) // the new owner announced itself
				break
			}
		}
		p := planEvery(&l, "node1", res, planOptions{settled: true, now: now, grace: 2 * time.Second})
		if !slices.IsSortedFunc(p.want, byAddress) {
			t.Fatalf("step %d: want not in address order: %+v", step, p.want)
		}
		seen := map[netip.Addr]bool{}
		for _, a := range p.want {
			if seen[a.IP] {
				t.Fatalf("step %d: %s twice in want", step, a.IP)
			}
			seen[a.IP] = true
			_, owned := l.owned[a.IP]
			_, releasing := l.releasing[a.IP]
			if owned == releasing || a.Releasing != releasing {
				t.Fatalf("step %d: %+v in want; owned %v, releasing %v", step, a, owned, releasing)
			}
		}
		if len(p.want) != len(l.owned)+len(l.releasing) {
			t.Fatalf("step %d: want has %d addresses, the node owns %d and hands over %d", step, len(p.want), len(l.owned), len(l.releasing))
		}
	}
}

// ifaceL2 reports the interfaces the test sets as still answering.
type ifaceL2 struct{ answering []string }

func (l *ifaceL2) SetAnnouncements([]layer2.Announcement) {}
func (l *ifaceL2) Interfaces(netip.Addr) []string         { return l.answering }

// TestYieldedPerInterface: an address handed over on two interfaces is
// taken over on each separately; the hand-over ends only when the new
// owner has announced itself on both, not at its first announcement.
func TestYieldedPerInterface(t *testing.T) {
	l2 := &ifaceL2{answering: []string{"eth0", "eth1"}}
	s, err := New(leantest.FromClientsets(fake.NewClientset(), heraldfake.NewClientset(), testNS), Options{NodeName: "node1", Namespace: testNS, L2: l2})
	if err != nil {
		t.Fatal(err)
	}
	s.l2.state.releasing[vip] = &release{newOwner: "node2", since: time.Unix(1000, 0)}
	l2.answering = []string{"eth1"} // taken over on eth0 only
	s.l2.yielded(vip)
	if s.l2.state.releasing[vip].takenOver {
		t.Fatal("hand-over ended after the takeover on eth0 while eth1 still answers")
	}
	l2.answering = nil // and on eth1
	s.l2.yielded(vip)
	if !s.l2.state.releasing[vip].takenOver {
		t.Error("hand-over not ended once no interface answers")
	}
}
