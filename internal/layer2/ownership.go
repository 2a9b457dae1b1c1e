package layer2

import (
	"math"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"
)

// ownership is an immutable snapshot of which VIPs are announced on which
// interface. Responders read the current snapshot for every packet, so a
// VIP stops being answered as soon as a new snapshot without it is stored.
//
// Each VIP on an interface has a vipState, shared by successive snapshots
// while the VIP stays owned, or stays releasing, there. Its answering flag
// is flipped in the packet path, with no new snapshot: on for an owned VIP
// once its first gratuitous packet has gone out (so the node stops being
// silent with its announcement, not before it), off for a releasing VIP
// once another host has announced it (so the old owner stops with the new
// owner's announcement, not after it).
type ownership map[string]map[netip.Addr]*vipState

// vipState is the state of one VIP on one interface.
type vipState struct {
	// releasing is fixed: a VIP that turns releasing or owned gets a new
	// vipState.
	releasing bool
	answering atomic.Bool
	// answeringFrom (unix ns) is when answering was turned on by this
	// node's first gratuitous packet; 0 when it was carried over from the
	// state before (or is not on yet).
	answeringFrom atomic.Int64
	// since is when this state began (owned or releasing).
	since time.Time
	// fencedUntil (unix ns) silences an owned VIP that lost a conflict
	// with another host (see fence); 0: not fenced. winner is that host's
	// MAC.
	fencedUntil atomic.Int64
	winner      atomic.Pointer[net.HardwareAddr]
	// liftedAt (unix ns) is when LiftFences last lifted the fence: the
	// fence then treats the claim as new (see Announcer.claimedAt).
	liftedAt atomic.Int64
	// conflictAt (unix ns) is when another host was last heard announcing
	// the VIP while owned here; 0: never.
	conflictAt atomic.Int64
	// heardAt (unix ns) is when another host was last heard announcing or
	// answering for the VIP; verifying: a fence verification runs (see
	// verifyFence).
	heardAt   atomic.Int64
	verifying atomic.Bool
	// beaten is the MAC of the last host this node won the fence against
	// for the VIP while owning it (nil: none). That host is silent for the
	// VIP, and is told when this node gives the VIP up (tellBeaten).
	beaten atomic.Pointer[net.HardwareAddr]
	// gaveUpAt (unix ns) is when a host last told this node, unfenced, that
	// it gave the VIP up (see Announcer.gaveUp).
	gaveUpAt atomic.Int64
	// toldLoserAt (unix ns), for a releasing VIP, is when this node last
	// told a host that lost the fence to it that it gave the VIP up (see
	// Announcer.tellLoser).
	toldLoserAt atomic.Int64
	// foreignAt (unix ns) is when a foreign claim of the VIP was last
	// reported (see Announcer.foreignClaim).
	foreignAt atomic.Int64
	// reasserting: a burst answering a foreign claim runs (see
	// Announcer.reassertBurst).
	reasserting atomic.Bool
	// pause is the VIP's ownership machine while this node, back from a
	// pause of its process, asks who answers the VIP or defers to the
	// host that does (nil otherwise; see pause.go); silent: it answers
	// and advertises nothing meanwhile.
	pause  atomic.Pointer[pauseState]
	silent atomic.Bool
}

// onceEvery reports whether something done at most once per every may be
// done at now, and if so records now in at (unix ns; 0: never done). Of
// callers racing for one slot, one wins.
func onceEvery(at *atomic.Int64, now time.Time, every time.Duration) bool {
	last := at.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < every {
		return false
	}
	return at.CompareAndSwap(last, now.UnixNano())
}

// beatenHost is the MAC of the last host this node won the fence against
// for the VIP, nil when there is none.
func (s *vipState) beatenHost() net.HardwareAddr {
	if s == nil {
		return nil
	}
	if b := s.beaten.Load(); b != nil {
		return *b
	}
	return nil
}

// fenced reports whether the VIP is fenced at now.
func (s *vipState) fenced(now time.Time) bool {
	return s != nil && s.fencedUntil.Load() > now.UnixNano()
}

// fenceWinner is the MAC of the host this VIP is fenced for at now, nil
// when it is not fenced.
func (s *vipState) fenceWinner(now time.Time) net.HardwareAddr {
	if !s.fenced(now) {
		return nil
	}
	if w := s.winner.Load(); w != nil {
		return *w
	}
	return net.HardwareAddr{}
}

// claimedAt is when this node's claim on the VIP began, for the fence: when
// the state began, or when its fence was last lifted (a claim renewed once
// the member list healed).
func (s *vipState) claimedAt() time.Time {
	if l := s.liftedAt.Load(); l > s.since.UnixNano() {
		return time.Unix(0, l)
	}
	return s.since
}

// vipOnLink names a VIP on an interface.
type vipOnLink struct {
	vip   netip.Addr
	iface string
}

// nextVIPState returns the state of a VIP on an interface after a
// reconcile, given its state before (nil when it was not announced there):
// the same while nothing changed; a VIP turning releasing answers (also
// on a node that never answered for it) until the new owner announces
// itself, unless it was fenced (another host won it and answers: it is
// handed over already); a VIP turning owned keeps answering if it did,
// and otherwise starts with its first gratuitous packet.
func nextVIPState(old *vipState, releasing bool, now time.Time) *vipState {
	if old != nil && old.releasing == releasing {
		return old
	}
	s := &vipState{releasing: releasing, since: now}
	if releasing {
		s.answering.Store(!old.fenced(now))
	} else {
		s.answering.Store(old != nil && old.answering.Load())
	}
	if old != nil {
		carryPause(old, s, releasing)
	}
	return s
}

// markAnnounced records that a gratuitous packet for an owned VIP went out
// (or could not be sent): from now on the VIP is answered.
func (s *vipState) markAnnounced() {
	if s == nil || s.releasing {
		return
	}
	now := time.Now().UnixNano()
	if s.answeringFrom.CompareAndSwap(awaitingAnnouncement, now) {
		return // a lifted fence (liftFence): answered from now on
	}
	if !s.answering.Load() {
		s.answeringFrom.Store(now)
		s.answering.Store(true)
	}
}

// awaitingAnnouncement, as answeringFrom, leaves every request to the host
// that answers the VIP now, until this node's next gratuitous packet.
const awaitingAnnouncement = math.MaxInt64

// liftFence ends the fence at now, the claim counting as new from then
// (claimedAt). With announcing (the caller is about to send a gratuitous
// packet) the VIP is answered from that packet on, as a new owner's is:
// the fence's winner answers until it reads it.
func (s *vipState) liftFence(now time.Time, announcing bool) {
	s.liftedAt.Store(now.UnixNano())
	if announcing {
		s.answeringFrom.Store(awaitingAnnouncement)
	}
	s.fencedUntil.Store(0)
}

// answersFrom is when the first gratuitous packet turned answering on
// (zero: carried over, or not answering yet).
func (s *vipState) answersFrom() time.Time {
	if s == nil {
		return time.Time{}
	}
	if ns := s.answeringFrom.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// markHeard records that another host announced or answered for the VIP.
func (s *vipState) markHeard() {
	if s != nil {
		s.heardAt.Store(time.Now().UnixNano())
	}
}

func newOwnership(assigned map[netip.Addr][]string, states map[vipOnLink]*vipState) ownership {
	o := ownership{}
	for vip, ifaces := range assigned {
		for _, name := range ifaces {
			if o[name] == nil {
				o[name] = map[netip.Addr]*vipState{}
			}
			o[name][vip] = states[vipOnLink{vip, name}]
		}
	}
	return o
}

// state returns the state of vip on the interface, nil when it is not
// announced there.
func (o ownership) state(iface string, vip netip.Addr) *vipState {
	return o[iface][vip]
}

// owns reports whether vip is answered on the interface.
func (o ownership) owns(iface string, vip netip.Addr) bool {
	s := o[iface][vip]
	return s != nil && s.answering.Load() && !s.silent.Load() && !s.fenced(time.Now())
}

// advertises reports whether gratuitous announcements may be sent for vip
// on the interface: it is owned and not being handed over.
func (o ownership) advertises(iface string, vip netip.Addr) bool {
	s := o[iface][vip]
	return s != nil && !s.releasing && !s.silent.Load() && !s.fenced(time.Now())
}

// advertised returns the VIPs owned, not releasing and not fenced on the
// interface, sorted: those the periodic refresh announces.
func (o ownership) advertised(iface string) []netip.Addr {
	var out []netip.Addr
	now := time.Now()
	for vip, s := range o[iface] {
		if !s.releasing && s.answering.Load() && !s.silent.Load() && !s.fenced(now) {
			out = append(out, vip)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// releasing reports whether vip is being handed over on the interface and
// still answered there.
func (o ownership) releasing(iface string, vip netip.Addr) bool {
	s := o[iface][vip]
	return s != nil && s.releasing && s.answering.Load()
}

// yielded reports whether vip was taken over on the interface.
func (o ownership) yielded(iface string, vip netip.Addr) bool {
	s := o[iface][vip]
	return s != nil && s.releasing && !s.answering.Load()
}
