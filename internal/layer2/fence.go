package layer2

import (
	"bytes"
	"context"
	"hash/fnv"
	"net"
	"net/netip"
	"slices"
	"time"
)

// The split-brain fence. Two nodes can both believe they own a VIP: the
// member-list port blocked between them while the LAN works, or two
// members that disagree for a moment. Each owner refreshes its VIPs with a
// gratuitous packet every Config.Refresh, so each hears the other. An
// owner that hears another MAC announce a VIP it owns resolves the
// conflict without talking: fenceWins ranks the two MACs for the VIP
// (rendezvous hashing), both sides compute the same answer. The loser
// (once its own claim is older than Config.FenceSettle: a younger one is a
// hand-over in progress, which the releasing side ends) stops answering
// and advertising the VIP at once, and stays fenced while it keeps hearing the winner (until
// 2 × Refresh after its last announcement: a winner that dies or stops
// frees the VIP again); the winner sends a gratuitous packet at once so
// clients point at it. Config.OnConflict reports each decision. While
// fenced, the loser checks every Config.FenceVerify that the winner still
// answers (verifyFence), and answers again at once when it does not.
// The fence yields only to another speaker's node: an announcement from
// any other host is a foreign claim, reported and answered with a
// gratuitous burst of this node's own (speakers.go).

// fenceWins says whether ours beats theirs for vip: the higher rendezvous
// weight, ties (a 64-bit collision) to the smaller MAC.
func fenceWins(vip netip.Addr, ours, theirs net.HardwareAddr) bool {
	a, b := macWeight(ours, vip), macWeight(theirs, vip)
	if a != b {
		return a > b
	}
	return bytes.Compare(ours, theirs) < 0
}

// FenceWins says whether the host with MAC ours keeps vip when the host
// with MAC theirs announces it too (both speakers). Tests use it to pick
// a MAC that outranks a speaker's.
func FenceWins(vip netip.Addr, ours, theirs net.HardwareAddr) bool {
	return fenceWins(vip, ours, theirs)
}

func macWeight(mac net.HardwareAddr, vip netip.Addr) uint64 {
	h := fnv.New64a()
	h.Write(mac)
	b := vip.As16()
	h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fence handles another host's announcement of a VIP this node owns (not
// releasing) on iface. It reports whether it acted. A winner acts at once;
// a loser only once its claim has settled (a younger claim is a hand-over
// in progress, which the releasing side ends). Each side reports a
// conflict once per 2 × Refresh.
func (a *Announcer) fence(iface, proto string, vip netip.Addr, ourMAC, by net.HardwareAddr) bool {
	s := a.owned.Load().state(iface, vip)
	now := time.Now()
	if s == nil || s.releasing {
		return false
	}
	if !a.fromSpeaker(by) {
		a.foreignClaim(iface, proto, vip, by, s)
		return true
	}
	won := fenceWins(vip, ourMAC, by)
	if !won && now.Sub(s.claimedAt()) < a.cfg.FenceSettle {
		return false
	}
	hold := 2 * a.cfg.Refresh
	if !won {
		w := slices.Clone(by)
		s.winner.Store(&w)
		s.fencedUntil.Store(now.Add(hold).UnixNano())
		a.verifyFence(iface, proto, vip, s)
	} else {
		b := slices.Clone(by)
		s.beaten.Store(&b)
		a.reassert(iface, proto, vip)
	}
	if last := s.conflictAt.Load(); last != 0 && now.Sub(time.Unix(0, last)) < hold {
		s.conflictAt.Store(now.UnixNano())
		return true // the same conflict, reported already
	}
	s.conflictAt.Store(now.UnixNano())
	result := "lost"
	if won {
		result = "won"
	} else {
		a.tellWinner(iface, proto, vip, by)
	}
	a.metrics.conflicts.WithLabelValues(iface, proto, result).Inc()
	a.log.Warn("another host announces a VIP this node announces", "ip", vip, "interface", iface, "protocol", proto, "by", by.String(), "result", result)
	if cb := a.cfg.OnConflict; cb != nil {
		by := slices.Clone(by)
		go cb(vip, iface, by, won)
	}
	return true
}

// tellWinner sends the fence's winner (MAC by), and it alone, one
// announcement of vip: a loser that heard the winner first announces
// nothing more, so without it the winner would never learn of the conflict
// (no count, no event on its side) when the loser's own announcements did
// not reach it first, as in a partition where the winner refreshes first.
// The frame goes to the winner's MAC, which no other host's kernel reads,
// so no client moves to the loser.
func (a *Announcer) tellWinner(iface, proto string, vip netip.Addr, by net.HardwareAddr) {
	r := a.responderOf(iface, proto)
	if r == nil {
		return
	}
	to := slices.Clone(by)
	go func() {
		if !r.awaitOpen() {
			return
		}
		if err := r.p.notify(vip, to); err != nil {
			a.log.Warn("cannot tell the fence's winner of the conflict", "ip", vip, "interface", iface, "protocol", proto, "winner", to.String(), "error", err)
		}
	}()
}

// noticeConflict handles an announcement of vip that another host (by)
// sent to this node's MAC alone: the loser of a fence telling the winner
// (tellWinner). It fences as another announcement would, but never yields
// a VIP being released nor remembers it as contested: the sender has
// stopped answering, and yielding to it would leave the VIP dark. A VIP
// this node is releasing and still answers was lost by that host to this
// node's claim, read after the claim had turned releasing (too late for
// the fence here to know it beat that host): this node tells it at once
// that it gave the VIP up (tellLoser), as tellBeaten does, so that it
// answers again and this node yields to its announcement. Without that it
// stayed fenced, answered by no one once this node's release grace ended,
// until its fence verification noticed.
func (a *Announcer) noticeConflict(iface, proto string, vip netip.Addr, ourMAC, by net.HardwareAddr) {
	s := a.owned.Load().state(iface, vip)
	switch {
	case s == nil, s.silent.Load(): // back from a pause, asking (pause.go)
	case s.releasing && s.answering.Load():
		a.tellLoser(iface, proto, vip, by, s)
	case !s.releasing:
		a.fence(iface, proto, vip, ourMAC, by)
	}
}

// tellLoser tells the host with MAC by, which lost the fence for vip to
// this node's claim and is silent since, that this node gave the VIP up
// (see tellBeaten), at most once per Config.FenceVerify for the state s
// (a loser that does not lift its fence tells this node again at its next
// conflict, not in a loop).
func (a *Announcer) tellLoser(iface, proto string, vip netip.Addr, by net.HardwareAddr, s *vipState) {
	if !onceEvery(&s.toldLoserAt, time.Now(), a.cfg.FenceVerify) {
		return
	}
	go a.tellBeaten([]beatenVIP{{vipOnLink{vip, iface}, slices.Clone(by)}})
}

// verifyFence watches a VIP this node lost the fence for: every
// Config.FenceVerify it asks who answers for the VIP, and when no other
// host answered (or announced it) within half of that, the winner has gone
// (it handed the VIP over, or stopped, without this node hearing of it):
// the fence is lifted and this node announces the VIP again at once.
// Without it both sides of a conflict can fall silent together, the
// winner yielding to the loser's last announcement while the loser stays
// fenced for 2 × Refresh. One verification runs per VIP state.
func (a *Announcer) verifyFence(iface, proto string, vip netip.Addr, s *vipState) {
	r := a.responderOf(iface, proto)
	if r == nil || !s.verifying.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.verifying.Store(false)
		if !r.awaitOpen() {
			return
		}
		every := a.cfg.FenceVerify
		for {
			if !wait(r.ctx, every, nil) || a.owned.Load().state(iface, vip) != s || !s.fenced(time.Now()) {
				return
			}
			if a.liftForeignFence(iface, proto, vip, s) {
				return
			}
			asked := time.Now()
			if err := r.p.solicit(vip); err != nil {
				a.log.Warn("cannot ask whether the fence's winner still answers", "ip", vip, "interface", iface, "protocol", proto, "error", err)
				continue
			}
			if !wait(r.ctx, every/2, nil) || a.owned.Load().state(iface, vip) != s {
				return
			}
			if s.heardAt.Load() >= asked.UnixNano() {
				continue // the winner still answers: stay fenced
			}
			s.fencedUntil.Store(0)
			a.metrics.fenceLifted.WithLabelValues(iface, proto).Inc()
			a.log.Warn("the host that won the fence no longer answers for the VIP: answering again", "ip", vip, "interface", iface, "protocol", proto)
			a.reassert(iface, proto, vip)
			return
		}
	}()
}

// LiftFences lifts every fence this node lost and announces those VIPs
// again at once; it returns how many it lifted. The speaker calls it when
// its member list sees a node alive again that it had seen dead (a
// partition healed), once it has set the announcements of the healed view:
// the VIPs still owned here are lifted, those handed over are released.
// Both sides agree on the owners again, and a fence's winner that now
// hands a VIP over to this node hears this node's announcement at once and
// stops, make-before-break, instead of going silent at the end of its
// release grace with this node still fenced until its verification
// noticed (0.5-0.8 s dark, seen in the lab).
//
// The winner may see the heal a moment later than this node, and until
// then it still owns the VIP and wins the fence again. So a lifted claim
// counts as new (vipState.claimedAt): for Config.FenceSettle this node
// does not yield to it, as a new owner does not yield to the old one in a
// hand-over, and the winner, turning releasing, yields to this node's
// announcement. Were the winner to keep the VIP, the fence runs again
// once the lifted claim has settled.
func (a *Announcer) LiftFences() int {
	now := time.Now()
	n := 0
	for iface, vips := range *a.owned.Load() {
		for vip, s := range vips {
			if s.releasing || !s.fenced(now) {
				continue
			}
			proto := protocolOf(vip)
			s.liftFence(now, a.responderOf(iface, proto) != nil)
			a.metrics.fenceLifted.WithLabelValues(iface, proto).Inc()
			a.reassert(iface, proto, vip)
			n++
		}
	}
	if n > 0 {
		a.log.Info("member list healed: lifted the fences this node lost and announced those VIPs again", "lifted", n)
	}
	return n
}

// responderOf returns the running responder of a protocol on an
// interface, nil when there is none (or it is not a real one).
func (a *Announcer) responderOf(iface, proto string) *responder {
	running := a.running.Load()
	if running == nil {
		return nil
	}
	return (*running)[responderKey{iface, proto}]
}

// reassert sends one gratuitous packet for vip on iface now.
func (a *Announcer) reassert(iface, proto string, vip netip.Addr) {
	if r := a.responderOf(iface, proto); r != nil {
		go func() {
			if r.awaitOpen() {
				_, _ = r.sendGratuitous(r.ctx, vip)
			}
		}()
	}
}

// refreshLoop sends one gratuitous packet for every VIP announced on the
// responder's interface every Refresh, so that two owners hear each other
// and clients' stale caches heal.
func (r *responder) refreshLoop() {
	if r.spec.refresh <= 0 || !r.awaitOpen() {
		return
	}
	t := time.NewTicker(r.spec.refresh)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		for _, vip := range r.spec.vips() {
			if _, err := r.sendGratuitous(context.Background(), vip); err != nil {
				r.log.Debug("refresh announcement failed", "ip", vip, "error", err)
			}
		}
	}
}
