package speaker

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/herald-lb/herald/internal/bgp"
)

// Events carries what the backends report to the speaker (the L2
// announcer's conflicts, foreign claims and takeovers, the BGP sessions'
// transitions, the member list's changes) from their goroutines to the
// speaker's event loop, which Run starts. The backends are built before
// the Speaker (it takes them as Options), so their callbacks publish here
// (NewEvents, then e.g. layer2.Config.OnYield = events.Yielded) and the
// Speaker consumes what was published once it runs. These are not
// Kubernetes Events; the loop turns some of them into those.
//
// Publishing never blocks: it appends under a mutex held only for the
// append and wakes the loop without waiting for it, so a slow reconcile
// (which holds the reconcilers' locks) never stalls a backend, and the L2
// read path never waits on the speaker. Nothing is dropped: a dropped
// takeover would leave a release waiting until its grace ends, and the
// L2 reports are few by construction (a conflict or foreign claim once
// per address and interface every 2 × Refresh, a takeover once per
// address and interface), the BGP transitions one per session state change. The
// member list's changes carry nothing (the reconcile reads its
// snapshot), so a burst of them coalesces into one reconcile.
type Events struct {
	mu      sync.Mutex
	pending []backendEvent
	members bool          // the member list changed since the loop last took
	wake    chan struct{} // capacity 1: a wake-up pending or not
}

// NewEvents returns an empty event queue for one Speaker (Options.Events).
func NewEvents() *Events { return &Events{wake: make(chan struct{}, 1)} }

// backendEvent is one report of a backend, delivered by the loop.
type backendEvent interface{ deliver(s *Speaker) }

type conflictEvent struct {
	vip   netip.Addr
	iface string
	by    net.HardwareAddr
	won   bool
}

func (e conflictEvent) deliver(s *Speaker) { s.l2.conflict(e.vip, e.iface, e.by, e.won) }

type foreignClaimEvent struct {
	vip   netip.Addr
	iface string
	by    net.HardwareAddr
}

func (e foreignClaimEvent) deliver(s *Speaker) { s.l2.foreignClaim(e.vip, e.iface, e.by) }

type yieldEvent struct{ vip netip.Addr }

func (e yieldEvent) deliver(s *Speaker) { s.l2.yielded(e.vip) }

type sessionEvent struct{ ev bgp.SessionEvent }

func (e sessionEvent) deliver(s *Speaker) { s.sessions.changed(e.ev) }

// Conflict publishes the L2 fence's decision on another host's
// announcement of vip (layer2.Config.OnConflict).
func (e *Events) Conflict(vip netip.Addr, iface string, by net.HardwareAddr, won bool) {
	e.publish(conflictEvent{vip: vip, iface: iface, by: slices.Clone(by), won: won})
}

// ForeignClaim publishes a claim of vip by a host that runs no speaker
// (layer2.Config.OnForeignClaim).
func (e *Events) ForeignClaim(vip netip.Addr, iface string, by net.HardwareAddr) {
	e.publish(foreignClaimEvent{vip: vip, iface: iface, by: slices.Clone(by)})
}

// Yielded publishes that another host took vip over on iface
// (layer2.Config.OnYield); the speaker asks the L2 backend which
// interfaces still answer.
func (e *Events) Yielded(vip netip.Addr, _ string, _ net.HardwareAddr) {
	e.publish(yieldEvent{vip: vip})
}

// SessionChanged publishes a BGP session's transition to or from
// Established (bgp.Config.OnSessionChange); the loop keeps their order.
func (e *Events) SessionChanged(ev bgp.SessionEvent) { e.publish(sessionEvent{ev: ev}) }

// MembersChanged publishes that the member list changed
// (members.Config.OnChange): one reconcile follows however many came.
func (e *Events) MembersChanged() {
	e.mu.Lock()
	e.members = true
	e.mu.Unlock()
	e.poke()
}

func (e *Events) publish(ev backendEvent) {
	e.mu.Lock()
	e.pending = append(e.pending, ev)
	e.mu.Unlock()
	e.poke()
}

// poke wakes the loop, or leaves the wake-up already pending.
func (e *Events) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// take returns what was published since the last take, in order, and
// whether the member list changed meanwhile.
func (e *Events) take() ([]backendEvent, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	batch, members := e.pending, e.members
	e.pending, e.members = nil, false
	return batch, members
}

// consumeEvents is the speaker's event loop: it delivers the backends'
// reports, in the order they were published, until ctx ends. Run starts
// it first and it outlives Run's return, so that takeovers are still
// seen while Shutdown waits for them (Run's context ends after Shutdown).
func (s *Speaker) consumeEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.events.wake:
		}
		batch, members := s.events.take()
		for _, ev := range batch {
			ev.deliver(s)
		}
		if members {
			s.Trigger()
		}
	}
}
