package layer2

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// A paused process. When every process of the node was stopped for a
// while (a VM pause, a live migration), the other nodes took its VIPs over,
// and on resume this node, whose view never changed, would answer side by
// side with them. So a heartbeat goroutine stamps a monotonic time every
// Config.PauseAfter / heartbeatsPerPause, and the read path (every frame
// read) and the send path of announcements compare the stamp with the
// clock: a stamp older than PauseAfter means this process was not
// scheduled for that long. Frames queued during the pause are read the
// moment it resumes, possibly before the heartbeat runs again, so the
// check is on that path itself. Every announced VIP is then fed the pause
// by its ownership machine (internal/l2owner), which silences it, asks who
// answers it, and defers to a speaker that does or claims it again
// (make-before-break); see that package for the rule.

// heartbeatsPerPause: the heartbeat runs this many times per PauseAfter,
// so in a process that runs, the stamp is at most a quarter of PauseAfter
// old, and a heartbeat delayed by up to three quarters of it (a starved
// process) is not taken for a pause.
const heartbeatsPerPause = 4

// pauseWatch detects that this process was not scheduled for longer than
// Config.PauseAfter.
type pauseWatch struct {
	cfg l2owner.Config
	// epoch is the monotonic origin of beat; beat (ns since epoch) is
	// when the heartbeat last ran, 0 while none runs.
	epoch time.Time
	beat  atomic.Int64
	// mu is held while a pause is handled: a goroutine that sees the
	// stale stamp waits until every VIP is silenced.
	mu sync.Mutex
}

func (w *pauseWatch) at(ns int64) time.Time { return w.epoch.Add(time.Duration(ns)) }
func (w *pauseWatch) ns(t time.Time) int64  { return int64(t.Sub(w.epoch)) }

// pauseState is a VIP's ownership machine once a pause was detected while
// it was announced; it is dropped when the pause has been dealt with.
type pauseState struct {
	mu sync.Mutex
	m  l2owner.Machine
}

// heartbeat stamps the time until ctx ends.
func (a *Announcer) heartbeat(ctx context.Context) {
	w := &a.pause
	every := w.cfg.PauseAfter / heartbeatsPerPause
	w.beat.Store(w.ns(time.Now()))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.beat.Store(0)
			return
		case <-t.C:
		}
		now := time.Now()
		last := w.beat.Load()
		if last == 0 || w.cfg.Paused(w.at(last), now) {
			a.awake()
			continue
		}
		// A failed swap: a pause was handled meanwhile, with a newer stamp.
		w.beat.CompareAndSwap(last, w.ns(now))
	}
}

// awake checks that this process was not paused since the heartbeat last
// ran; if it was, every announced VIP is handled as paused before it
// returns. Called for every frame read and every announcement sent.
func (a *Announcer) awake() {
	w := &a.pause
	last := w.beat.Load()
	if last == 0 || !w.cfg.Paused(w.at(last), time.Now()) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	last = w.beat.Load()
	if last == 0 || !w.cfg.Paused(w.at(last), now) {
		return // handled by another goroutine meanwhile
	}
	gap := now.Sub(w.at(last))
	n := a.pausedAll(now, gap)
	w.beat.Store(w.ns(now))
	a.metrics.pauses.Inc()
	a.log.Warn("this process was not scheduled for longer than the member list's quickest detection: "+
		"answering nothing for its VIPs until it knows who answers them", "gap", gap.Round(time.Millisecond), "threshold", w.cfg.PauseAfter, "silenced", n)
}

// pausedAll feeds the pause to the machine of every announced VIP that is
// answered (or about to be) and returns how many went silent.
func (a *Announcer) pausedAll(now time.Time, gap time.Duration) int {
	ev := l2owner.Event{Kind: l2owner.Pause, At: now, Gap: gap}
	asks := map[responderKey][]netip.Addr{}
	n := 0
	for iface, vips := range *a.owned.Load() {
		for vip, s := range vips {
			if s.fenced(now) || (s.releasing && !s.answering.Load()) {
				continue // silent already: fenced or taken over
			}
			ps := s.pause.Load()
			if ps == nil {
				phase := l2owner.Owner
				if s.releasing {
					phase = l2owner.Releasing
				}
				ps = &pauseState{m: l2owner.NewIn(a.pause.cfg, phase)}
				s.pause.Store(ps)
			}
			ps.mu.Lock()
			acts := ps.m.Step(ev)
			a.act(iface, vip, s, ps, acts, now, asks)
			ps.mu.Unlock()
			if s.silent.Load() {
				n++
			}
		}
	}
	for k, vips := range asks {
		a.askAll(k, vips)
	}
	return n
}

// pauseStep feeds ev to the machine of vip on iface, if it has one, and
// takes its actions. It reports whether the machine took the event
// (it asks who answers: nothing else may act on the VIP meanwhile).
func (a *Announcer) pauseStep(iface string, vip netip.Addr, ev l2owner.Event) bool {
	s := a.owned.Load().state(iface, vip)
	if s == nil {
		return false
	}
	ps := s.pause.Load()
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s.pause.Load() != ps {
		return false
	}
	phase := ps.m.Phase()
	if phase == l2owner.Deferred && ev.Kind == l2owner.Asked {
		// The deferral is the fence; one lifted another way is over.
		if w := s.fenceWinner(ev.At); w == nil || w.String() != ps.m.By() {
			s.pause.CompareAndSwap(ps, nil)
			return false
		}
	}
	acts := ps.m.Step(ev)
	a.act(iface, vip, s, ps, acts, ev.At, nil)
	return phase == l2owner.Asking
}

// act takes a machine's actions for vip on iface (state s), under ps.mu.
// Questions are added to asks when it is not nil, sent at once otherwise.
func (a *Announcer) act(iface string, vip netip.Addr, s *vipState, ps *pauseState, acts []l2owner.Action, now time.Time, asks map[responderKey][]netip.Addr) {
	proto := protocolOf(vip)
	for _, act := range acts {
		switch act.Do {
		case l2owner.AnswerOff:
			s.silent.Store(true)
		case l2owner.AnswerOn:
			// Requests received before this node's announcement are
			// left to the host that answered until then.
			if s.fenced(now) { // deferred: the host deferred to gave it up
				s.liftFence(now, !s.releasing)
				a.metrics.fenceLifted.WithLabelValues(iface, proto).Inc()
			} else if !s.releasing {
				s.answeringFrom.Store(awaitingAnnouncement)
			}
			s.silent.Store(false)
		case l2owner.Announce:
			// a burst, as a new owner's: a client that cached the
			// other host's answer within its ARP locktime ignores
			// a single announcement
			if r := a.responderOf(iface, proto); r != nil {
				r.announce(vip)
			}
		case l2owner.Ask:
			k := responderKey{iface, proto}
			if asks != nil {
				asks[k] = append(asks[k], vip)
			} else {
				a.askAll(k, []netip.Addr{vip})
			}
		case l2owner.Wake:
			time.AfterFunc(act.At.Sub(now), func() { a.pauseTick(iface, vip, ps) })
		case l2owner.Defer:
			a.deferTo(iface, proto, vip, s, act.To, now)
		case l2owner.Yield:
			s.silent.Store(false)
			if by, err := net.ParseMAC(act.To); err == nil {
				a.yield(iface, proto, vip, by)
			}
		}
	}
	switch ps.m.Phase() {
	case l2owner.Asking, l2owner.Deferred:
	default:
		s.pause.CompareAndSwap(ps, nil) // dealt with
	}
}

// deferTo silences vip on iface for the host to, which answers it now:
// the fence, lost to that host, with its verification.
func (a *Announcer) deferTo(iface, proto string, vip netip.Addr, s *vipState, to string, now time.Time) {
	by, err := net.ParseMAC(to)
	if err != nil {
		return
	}
	hold := 2 * a.cfg.Refresh
	if hold <= 0 {
		hold = 2 * DefaultRefresh
	}
	s.winner.Store(&by)
	s.fencedUntil.Store(now.Add(hold).UnixNano())
	s.silent.Store(false) // the fence silences it from here
	a.log.Info("another speaker answers a VIP this node owned before its pause: staying silent until it gives the VIP up",
		"ip", vip, "interface", iface, "protocol", proto, "by", to)
	a.verifyFence(iface, proto, vip, s)
}

// pauseTick feeds a Wake the machine asked for.
func (a *Announcer) pauseTick(iface string, vip netip.Addr, ps *pauseState) {
	s := a.owned.Load().state(iface, vip)
	if s == nil || s.pause.Load() != ps {
		return
	}
	a.pauseStep(iface, vip, l2owner.Event{Kind: l2owner.Tick, At: time.Now()})
}

// pauseHeard feeds the machine that the host by answered or announced
// vip; it reports whether the machine took it (see pauseStep).
func (a *Announcer) pauseHeard(iface string, vip netip.Addr, by net.HardwareAddr) bool {
	if len(by) != 6 {
		return false
	}
	return a.pauseStep(iface, vip, l2owner.Event{Kind: l2owner.Heard, At: time.Now(), By: by.String(), Speaker: a.fromSpeaker(by)})
}

// asked handles another host's question of who answers vip (an ARP
// request or a neighbour solicitation from its MAC by): a speaker that
// asks does not hold the VIP as its owner (see l2owner).
func (a *Announcer) asked(iface string, vip netip.Addr, by net.HardwareAddr) {
	s := a.owned.Load().state(iface, vip)
	if s == nil || s.pause.Load() == nil {
		return
	}
	a.pauseStep(iface, vip, l2owner.Event{Kind: l2owner.Asked, At: time.Now(), By: by.String(), Speaker: a.fromSpeaker(by)})
}

// askAll asks who answers each of vips on the responder k, in the
// background.
func (a *Announcer) askAll(k responderKey, vips []netip.Addr) {
	r := a.responderOf(k.iface, k.proto)
	if r == nil {
		return
	}
	go func() {
		if !r.awaitOpen() {
			return
		}
		for _, vip := range vips {
			if err := r.p.solicit(vip); err != nil {
				a.log.Debug("cannot ask who answers a VIP after a pause", "ip", vip, "interface", k.iface, "error", err)
			}
		}
	}()
}

// carryPause hands the machine of a VIP still asking who answers on to
// its next state (the decision turned it owned or releasing meanwhile).
func carryPause(old, next *vipState, releasing bool) {
	ps := old.pause.Load()
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m.Phase() != l2owner.Asking {
		return
	}
	kind := l2owner.Claim
	if releasing {
		kind = l2owner.Release
	}
	ps.m.Step(l2owner.Event{Kind: kind}) // no action while asking
	next.silent.Store(true)
	next.pause.Store(ps)
}
