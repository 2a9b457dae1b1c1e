package layer2

import (
	"math"
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
// once its machine yields (so the old owner stops with the new owner's
// announcement, not after it).
type ownership map[string]map[netip.Addr]*vipState

// vipState is the state of one VIP on one interface: what the fast path
// reads, written by the VIP's ownership machine (owner, see owner.go).
type vipState struct {
	// releasing is fixed: a VIP that turns releasing or owned gets a new
	// vipState (sharing the machine).
	releasing bool
	answering atomic.Bool
	// answeringFrom (unix ns) is when answering was turned on by this
	// node's first gratuitous packet; 0 when it was carried over from the
	// state before (or is not on yet).
	answeringFrom atomic.Int64
	// quietUntil (unix ns): the machine silenced the VIP until then (a
	// lost fence, a deferral, quietForever while it asks who answers
	// after a pause); 0: not silenced.
	quietUntil atomic.Int64
	// reasserting: a burst answering a foreign claim runs (see
	// Announcer.reassertBurst).
	reasserting atomic.Bool
	own         *owner
}

// quietForever, as quietUntil, silences a VIP until the machine says
// otherwise.
const quietForever = math.MaxInt64

// quiet reports whether the machine silenced the VIP at now.
func (s *vipState) quiet(now time.Time) bool {
	return s != nil && s.quietUntil.Load() > now.UnixNano()
}

// vipOnLink names a VIP on an interface.
type vipOnLink struct {
	vip   netip.Addr
	iface string
}

// nextVIPState returns the state of a VIP on an interface after a
// reconcile, given its state before (nil when it was not announced
// there): the same while nothing changed; a VIP turning releasing
// answers (also on a node that never answered for it) until the new
// owner shows itself (its machine may yield at once: a fenced VIP is
// handed over already); a VIP turning owned keeps answering if it did,
// and otherwise starts with its first gratuitous packet.
func nextVIPState(old *vipState, releasing bool) *vipState {
	if old != nil && old.releasing == releasing {
		return old
	}
	s := &vipState{releasing: releasing}
	if releasing {
		s.answering.Store(true)
	} else {
		s.answering.Store(old != nil && old.answering.Load())
	}
	if old != nil {
		s.quietUntil.Store(old.quietUntil.Load())
		s.own = old.own
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
		return // the machine's AnswerOn: answered from now on
	}
	if !s.answering.Load() {
		s.answeringFrom.Store(now)
		s.answering.Store(true)
	}
}

// awaitingAnnouncement, as answeringFrom, leaves every request to the host
// that answers the VIP now, until this node's next gratuitous packet.
const awaitingAnnouncement = math.MaxInt64

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
	return s != nil && s.answering.Load() && !s.quiet(time.Now())
}

// advertises reports whether gratuitous announcements may be sent for vip
// on the interface: it is owned and not being handed over.
func (o ownership) advertises(iface string, vip netip.Addr) bool {
	s := o[iface][vip]
	return s != nil && !s.releasing && !s.quiet(time.Now())
}

// advertised returns the VIPs owned, not releasing and not fenced on the
// interface, sorted: those the periodic refresh announces.
func (o ownership) advertised(iface string) []netip.Addr {
	var out []netip.Addr
	now := time.Now()
	for vip, s := range o[iface] {
		if !s.releasing && s.answering.Load() && !s.quiet(now) {
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
