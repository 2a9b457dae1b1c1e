package speaker

import (
	"context"
	"net/netip"

	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
)

// L2 answers ARP/NDP for the addresses this node announces
// (*layer2.Announcer).
type L2 interface {
	SetAnnouncements(want []layer2.Announcement)
	Interfaces(ip netip.Addr) []string
}

// Fences is the part of an L2 backend (*layer2.Announcer) that lifts the
// split-brain fences this node lost (see layer2.Announcer.LiftFences);
// the speaker uses it when its L2 backend has it.
type Fences interface {
	LiftFences() int
}

// Welcomes is the part of a member list (*members.Members) that tells a
// starting member once this node has acted on its arrival: the speaker
// reads Generation before it reads the member states of a decision and
// calls Applied once the decision is applied (see internal/members'
// welcome.go). The speaker uses it when its member list has it.
type Welcomes interface {
	Generation() uint64
	Applied(gen uint64)
}

// BGP holds this node's BGP sessions and routes (*bgp.Speaker).
type BGP interface {
	// ApplyChange applies one change set: the whole desired state, or
	// the paths of some prefixes alone (as the last desired state whose
	// paths of those prefixes are replaced).
	ApplyChange(ctx context.Context, c bgp.Change) error
	Sessions() []bgp.SessionState
	Shutdown(ctx context.Context) error
}

// Liveness says which nodes' speakers are alive (*members.Members).
type Liveness interface {
	State(node string) members.State
	Settled() bool
	Join(addrs []string)
	Retain(nodes []string)
	Leave(ctx context.Context) error
}
