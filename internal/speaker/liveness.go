package speaker

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/members"
)

// observeLiveness runs at the start of each reconcile: it works out
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
func (s *Speaker) observeLiveness(nodes []*corev1.Node) bool {
	ml := s.memberList()
	var unknown, dead, up, others []string
	for _, n := range nodes {
		if n.Name == s.opts.NodeName {
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
	s.noteRejoins(ml, dead)
	byLeave := s.noteAlone(ml, up)
	isolated := ml != nil && ml.Settled() && len(others) > 0 && len(up) == 0 && len(dead) > 0 && !byLeave
	want := unknown
	if isolated {
		want = append(want, dead...)
	}
	want = append(want, s.tellSpeakerMACs(ml, others)...)
	s.leases.want(want)
	if was := s.isolated.Swap(isolated); was != isolated {
		if isolated {
			s.log.Warn("cut off from every other member: the Leases decide which dead members are alive; keeping the addresses announced so far", "dead", dead)
		} else {
			s.log.Info("member list reaches other members again; claiming nothing new for a moment", "for", healSettle)
			s.claimFrom.Store(time.Now().Add(healSettle).UnixNano()) // the clock of reconcile's plan
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
func (s *Speaker) noteAlone(ml Liveness, up []string) bool {
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	before := s.upBefore
	s.upBefore = up
	switch {
	case ml == nil || len(up) > 0:
		s.aloneByLeave = false
	case len(before) > 0:
		s.aloneByLeave = !slices.ContainsFunc(before, func(n string) bool { return ml.State(n) != members.Left })
	}
	return s.aloneByLeave
}

// noteRejoins records, for liftFences, that a node the member list saw
// dead at the last reconcile is up again (a partition healed). dead is
// the nodes dead now.
func (s *Speaker) noteRejoins(ml Liveness, dead []string) {
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	before := s.deadBefore
	s.deadBefore = dead
	if ml == nil {
		return
	}
	for _, n := range before {
		if st := ml.State(n); st == members.Alive || st == members.Suspect {
			s.log.Info("a node seen dead is a member again", "node", n)
			s.rejoined = true
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
func (s *Speaker) liftFences() {
	if time.Now().UnixNano() < s.claimFrom.Load() {
		return
	}
	s.deadMu.Lock()
	rejoined := s.rejoined
	s.rejoined = false
	s.deadMu.Unlock()
	if f, ok := s.opts.L2.(Fences); ok && rejoined {
		f.LiftFences()
	}
}
