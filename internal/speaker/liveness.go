package speaker

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/members"
)

// liveness says which nodes' speakers are alive (live), from the member
// list and the Lease book, renews this node's own Lease, and follows how
// this node sees the others at each reconcile (observe): cut off from
// all of them, a node seen dead that is back, the other speakers'
// link-layer addresses for the L2 fence.
type liveness struct {
	node    string
	self    func() bool // this node's speaker is up: synced, not leaving
	fence   L2          // the L2 backend, for its SpeakerMACs and Fences parts (nil: none)
	log     *slog.Logger
	members atomic.Pointer[memberHolder]
	leases  *leaseBook
	renewer *leaseRenewer
	// isolated: the member list sees no other node alive (observe).
	isolated atomic.Bool
	// claimFrom (unix ns): no new L2 claims before then (healSettle).
	claimFrom atomic.Int64

	mu sync.Mutex // guards the fields below
	// deadBefore: the nodes the member list saw dead at the last
	// reconcile; rejoined: one of them is a member again since the last
	// liftFences (noteRejoins).
	deadBefore []string
	rejoined   bool
	// upBefore: the other nodes up at the last reconcile; aloneByLeave:
	// none is up since the last of them left gracefully (noteAlone).
	upBefore     []string
	aloneByLeave bool
	// speakerMACs: the set last handed to the L2 backend (macsKey).
	speakerMACs string
	joined      string // node addresses last handed to Join
	retained    string // Node names last handed to Retain
}

// memberHolder lets the member list be stored once it has started.
type memberHolder struct{ Liveness }

// memberList returns the member list, nil before it started or without one.
func (lv *liveness) memberList() Liveness {
	if h := lv.members.Load(); h != nil {
		return h.Liveness
	}
	return nil
}

// settled: the member list has settled, or there is none.
func (lv *liveness) settled() bool {
	ml := lv.memberList()
	return ml == nil || ml.Settled()
}

// observe runs at the start of each reconcile: it works out
// whether this node is cut off from every other member, and which Leases
// matter (see live). It returns whether this node is isolated.
//
// Isolated: the member list has settled and sees no other node alive,
// although it has seen some of them die. Either every other speaker died
// at once, or this node is the one cut off (the member-list port blocked
// between it and the rest while the LAN and the API server work). It
// cannot tell which from the member list, so it trusts the Leases for the
// dead ones: a node whose speaker still renews its Lease keeps its
// addresses, and this node keeps what it announced before (see
// l2State.plan) plus what the Leases say is orphaned. It never claims
// every address because it hears nobody. A node whose last live members
// left gracefully is not isolated (noteAlone): it heard them go.
func (lv *liveness) observe(nodes []*corev1.Node) bool {
	ml := lv.memberList()
	var unknown, dead, up, others []string
	for _, n := range nodes {
		if n.Name == lv.node {
			continue
		}
		others = append(others, n.Name)
		state := members.Unknown
		if ml != nil {
			state = ml.State(n.Name)
		}
		switch state {
		case members.Alive, members.Suspect:
			up = append(up, n.Name)
		case members.Dead:
			dead = append(dead, n.Name)
		case members.Unknown:
			unknown = append(unknown, n.Name)
		}
	}
	lv.noteRejoins(ml, dead)
	byLeave := lv.noteAlone(ml, up)
	isolated := ml != nil && ml.Settled() && len(others) > 0 && len(up) == 0 && len(dead) > 0 && !byLeave
	want := unknown
	if isolated {
		want = append(want, dead...)
	}
	want = append(want, lv.tellSpeakerMACs(ml, others)...)
	lv.leases.want(want)
	if was := lv.isolated.Swap(isolated); was != isolated {
		if isolated {
			lv.log.Warn("cut off from every other member: the Leases decide which dead members are alive; keeping the addresses announced so far", "dead", dead)
		} else {
			lv.log.Info("member list reaches other members again; claiming nothing new for a moment", "for", healSettle)
			lv.claimFrom.Store(time.Now().Add(healSettle).UnixNano()) // the clock of reconcile's plan
		}
	}
	return isolated
}

// healSettle is how long a node that was cut off from every other member
// claims no new address once the member list reaches them again: they
// come back one at a time (15 ms apart in the lab), and a view with some
// of them still dead would claim their addresses, answered by them, for
// that moment. Handing addresses over is not delayed; the owners of the
// addresses claimed late keep answering them until then (make-before-
// break).
const healSettle = 200 * time.Millisecond

// noteAlone tracks how this node came to see no other member alive, and
// returns whether the last ones alive all left (said goodbye: their
// speakers stopped or restart) rather than died. A node that heard them
// leave is not cut off: the deaths it saw while they were alive stand,
// and it is not isolated. Otherwise a crashlooping speaker's addresses
// would go back to it, by its Lease still fresh for up to 15 s, whenever
// the only other live speaker restarts (the rolling update of a 3-node
// cluster with one node broken).
func (lv *liveness) noteAlone(ml Liveness, up []string) bool {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	before := lv.upBefore
	lv.upBefore = up
	switch {
	case ml == nil || len(up) > 0:
		lv.aloneByLeave = false
	case len(before) > 0:
		lv.aloneByLeave = !slices.ContainsFunc(before, func(n string) bool { return ml.State(n) != members.Left })
	}
	return lv.aloneByLeave
}

// noteRejoins records, for liftFences, that a node the member list saw
// dead at the last reconcile is up again (a partition healed). dead is
// the nodes dead now.
func (lv *liveness) noteRejoins(ml Liveness, dead []string) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	before := lv.deadBefore
	lv.deadBefore = dead
	if ml == nil {
		return
	}
	for _, n := range before {
		if st := ml.State(n); st == members.Alive || st == members.Suspect {
			lv.log.Info("a node seen dead is a member again", "node", n)
			lv.rejoined = true
			return
		}
	}
}

// liftFences lifts the L2 fences this node lost, once a node seen dead is
// a member again (see layer2.Announcer.LiftFences). It runs after this
// reconcile's announcements are set, so that only the addresses this node
// still owns in the healed view are lifted and announced: those it now
// hands over are released, not claimed back for a moment.
//
// Lifting a fence claims the address again, so, like a new claim, it waits
// for claimFrom (healSettle): the reconcile planned at claimFrom lifts.
func (lv *liveness) liftFences() {
	if time.Now().UnixNano() < lv.claimFrom.Load() {
		return
	}
	lv.mu.Lock()
	rejoined := lv.rejoined
	lv.rejoined = false
	lv.mu.Unlock()
	if f, ok := lv.fence.(Fences); ok && rejoined {
		f.LiftFences()
	}
}

// live says whether a node's speaker is known to be up, from two sources:
//   - this node: once synced, unless it is leaving;
//   - alive (or suspect) in the member list: up; left: down (it said so);
//   - seen dead in the member list (by this speaker, or by a member that
//     reported it: internal/members' reports): down, unless this node is
//     cut off from every other member (see isolated): then up until its
//     Lease has been read, and afterwards only once the Lease has been
//     renewed since (its speaker is alive on the other side of a
//     partition);
//   - never seen by the member list (or no member list): its Lease
//     decides: renewed within its duration. A node whose Lease was never
//     read is down: never "alive because never heard of".
func (lv *liveness) live(node string) bool {
	if node == lv.node {
		return lv.self()
	}
	ml := lv.memberList()
	state := members.Unknown
	if ml != nil {
		state = ml.State(node)
	}
	switch state {
	case members.Alive, members.Suspect:
		return true
	case members.Left:
		return false
	case members.Dead:
		if !lv.isolated.Load() {
			return false
		}
		// Cut off from every other member, this node cannot tell a
		// dead member from one it no longer hears. Until that member's
		// Lease has been read it keeps its addresses (taking them would
		// claim every address the moment the member list went quiet);
		// then it is up only if its speaker renews the Lease: one that
		// died stopped renewing it, though the Lease stays fresh for its
		// duration (15 s), and its addresses must not stay dark so long.
		return lv.leases.unread(node) || lv.leases.renewed(node)
	}
	return lv.leases.alive(node)
}

// join hands the other nodes' addresses to the member list, and
// the Node names to Retain, when they change.
func (lv *liveness) join(nodes []*corev1.Node) {
	ml := lv.memberList()
	if ml == nil {
		return
	}
	var addrs, names []string
	for _, n := range nodes {
		names = append(names, n.Name)
		if n.Name == lv.node {
			continue
		}
		if v4, v6 := nodeAddresses(n); v4.IsValid() {
			addrs = append(addrs, v4.String())
		} else if v6.IsValid() {
			addrs = append(addrs, v6.String())
		}
	}
	slices.Sort(addrs)
	slices.Sort(names)
	addrKey, nameKey := strings.Join(addrs, ","), strings.Join(names, ",")
	lv.mu.Lock()
	addrsChanged, namesChanged := addrKey != lv.joined, nameKey != lv.retained
	lv.joined, lv.retained = addrKey, nameKey
	lv.mu.Unlock()
	if addrsChanged {
		ml.Join(addrs)
	}
	if namesChanged {
		ml.Retain(names)
	}
}
