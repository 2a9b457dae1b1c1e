package speaker

import (
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
// every address because it hears nobody.
func (s *Speaker) observeLiveness(nodes []*corev1.Node) bool {
	ml := s.memberList()
	var unknown, dead []string
	others, up := 0, 0
	for _, n := range nodes {
		if n.Name == s.opts.NodeName {
			continue
		}
		others++
		state := members.Unknown
		if ml != nil {
			state = ml.State(n.Name)
		}
		switch state {
		case members.Alive, members.Suspect:
			up++
		case members.Dead:
			dead = append(dead, n.Name)
		case members.Unknown:
			unknown = append(unknown, n.Name)
		}
	}
	s.liftFencesOnRejoin(ml, dead)
	isolated := ml != nil && ml.Settled() && others > 0 && up == 0 && len(dead) > 0
	want := unknown
	if isolated {
		want = append(want, dead...)
	}
	s.leases.want(want)
	if was := s.isolated.Swap(isolated); was != isolated {
		if isolated {
			s.log.Warn("cut off from every other member: the Leases decide which dead members are alive; keeping the addresses announced so far", "dead", dead)
		} else {
			s.log.Info("member list reaches other members again")
		}
	}
	return isolated
}

// liftFencesOnRejoin lifts the L2 fences this node lost when a node the
// member list saw dead at the last reconcile is up again (a partition
// healed; see layer2.Announcer.LiftFences). dead is the nodes dead now.
func (s *Speaker) liftFencesOnRejoin(ml Liveness, dead []string) {
	s.deadMu.Lock()
	before := s.deadBefore
	s.deadBefore = dead
	s.deadMu.Unlock()
	f, ok := s.opts.L2.(Fences)
	if !ok || ml == nil {
		return
	}
	for _, n := range before {
		if st := ml.State(n); st == members.Alive || st == members.Suspect {
			s.log.Info("a node seen dead is a member again", "node", n)
			f.LiftFences()
			return
		}
	}
}
