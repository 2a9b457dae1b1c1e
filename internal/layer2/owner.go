package layer2

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// Feeding the ownership machines. Who answers an address on an
// interface, and what this node tells the segment about it, is decided by
// the address's machine (internal/l2owner: claims and releases, the
// fence, the give-up, the release ask, the yield, the pause). This file
// is the socket side of it: the read path turns frames into the
// machine's events inline, and act turns its actions into the atomics the
// fast path reads (vipState), frames on the responders' sockets, timers,
// metrics, logs and callbacks.

// owner is the ownership machine of one VIP on one interface, shared by
// the vipStates that follow each other there (owned, releasing, claimed
// back) until the VIP is no longer announced on it.
type owner struct {
	iface string
	vip   netip.Addr
	mu    sync.Mutex
	m     l2owner.Machine
	// s is the VIP's current state (its atomics are the machine's
	// answers for the fast path); mac the interface's MAC as last seen;
	// dropped: the VIP is no longer announced on the interface, and
	// late timers and frames are ignored.
	s       *vipState
	mac     net.HardwareAddr
	dropped bool
}

// machineConfig is the configuration of the machine of vip on an
// interface whose MAC is mac.
func (a *Announcer) machineConfig(vip netip.Addr, mac net.HardwareAddr) l2owner.Config {
	return l2owner.Config{PauseAfter: a.pause.cfg.PauseAfter, Refresh: a.cfg.Refresh,
		FenceSettle: a.cfg.FenceSettle, FenceVerify: a.cfg.FenceVerify, Addr: vip, MAC: mac}
}

// step feeds ev to the machine of vip on iface (whose MAC is mac, nil when
// not known here), if the VIP is announced there, and takes its actions.
func (a *Announcer) step(iface string, vip netip.Addr, mac net.HardwareAddr, ev l2owner.Event) {
	s := a.owned.Load().state(iface, vip)
	if s == nil {
		return
	}
	o := s.own
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped {
		return
	}
	a.stepLocked(o, mac, ev, nil)
}

// sink collects actions to take together: questions by responder (one
// goroutine per responder after a pause of thousands of VIPs), and the
// VIPs to announce once reconcile has opened their responders.
type sink struct {
	asks     map[responderKey][]netip.Addr
	announce map[vipOnLink]bool
}

// stepLocked feeds ev to o's machine, under o.mu, and takes its actions
// (those sk collects, when not nil, are left to the caller). It returns
// the actions.
func (a *Announcer) stepLocked(o *owner, mac net.HardwareAddr, ev l2owner.Event, sk *sink) []l2owner.Action {
	if len(mac) == 6 {
		o.mac = mac
	}
	o.m.Configure(a.machineConfig(o.vip, o.mac))
	watched := o.m.By() // the host a lifted fence was for
	acts := o.m.Step(ev)
	a.act(o, acts, ev.At, sk, watched)
	return acts
}

// event is an event from the host by (nil: not known), which is another
// speaker's node or not (fromSpeaker).
func (a *Announcer) event(kind l2owner.Kind, by net.HardwareAddr) l2owner.Event {
	ev := l2owner.Event{Kind: kind, At: time.Now()}
	if len(by) == 6 {
		ev.By, ev.Speaker = by.String(), a.fromSpeaker(by)
	}
	return ev
}

// foreignAnnouncement handles another host's gratuitous ARP or unsolicited
// NA for vip, read on iface whose MAC is ourMAC.
func (a *Announcer) foreignAnnouncement(iface, _ string, vip netip.Addr, ourMAC, by net.HardwareAddr) {
	a.step(iface, vip, ourMAC, a.event(l2owner.Announced, by))
}

// noticeConflict handles an announcement of vip that another host (by)
// sent to this node's MAC alone: the loser of a fence telling the winner
// (see TellWinner).
func (a *Announcer) noticeConflict(iface, _ string, vip netip.Addr, ourMAC, by net.HardwareAddr) {
	a.step(iface, vip, ourMAC, a.event(l2owner.Notified, by))
}

// gaveUp handles another host's probe for vip sent to this node alone:
// the winner of a fence (by) telling this node, the loser, that it gave
// the VIP up (TellLoser).
func (a *Announcer) gaveUp(iface, _ string, vip netip.Addr, by net.HardwareAddr) {
	a.step(iface, vip, nil, a.event(l2owner.GaveUp, by))
}

// answered handles another host's answer (by: its MAC, nil when unknown)
// to this node's question of who answers for vip on iface.
func (a *Announcer) answered(iface string, vip netip.Addr, by net.HardwareAddr) {
	a.step(iface, vip, nil, a.event(l2owner.Heard, by))
}

// asked handles another host's question of who answers vip (an ARP probe
// or a neighbour solicitation from its MAC by).
func (a *Announcer) asked(iface string, vip netip.Addr, by net.HardwareAddr) {
	if len(by) != 6 {
		return
	}
	a.step(iface, vip, nil, a.event(l2owner.Asked, by))
}

// tick feeds o's machine a Wake it asked for, naming the host it watches
// and whether that host still counts as another speaker's node.
func (a *Announcer) tick(o *owner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped {
		return
	}
	ev := l2owner.Event{Kind: l2owner.Tick, At: time.Now()}
	if by, err := net.ParseMAC(o.m.By()); err == nil {
		ev.By, ev.Speaker = o.m.By(), a.fromSpeaker(by)
	}
	a.stepLocked(o, nil, ev, nil)
}

// LiftFences lifts every fence this node lost and announces those VIPs
// again at once; it returns how many it lifted. The speaker calls it when
// its member list sees a node alive again that it had seen dead (a
// partition healed), once it has set the announcements of the healed
// view: the VIPs still owned here are lifted, those handed over are
// released (see l2owner's Healed).
func (a *Announcer) LiftFences() int {
	n := 0
	for _, vips := range *a.owned.Load() {
		for _, s := range vips {
			o := s.own
			o.mu.Lock()
			if !o.dropped && o.s == s {
				for _, act := range a.stepLocked(o, nil, l2owner.Event{Kind: l2owner.Healed, At: time.Now()}, nil) {
					if act.Do == l2owner.Lift {
						n++
					}
				}
			}
			o.mu.Unlock()
		}
	}
	if n > 0 {
		a.log.Info("member list healed: lifted the fences this node lost and announced those VIPs again", "lifted", n)
	}
	return n
}

// act takes the actions of o's machine, under o.mu, at now (the event's
// time); watched is the host the machine watched before the event.
// Questions and announcements are left to sk when it collects them, sent
// at once otherwise.
func (a *Announcer) act(o *owner, acts []l2owner.Action, now time.Time, sk *sink, watched string) {
	s, iface, vip := o.s, o.iface, o.vip
	proto := protocolOf(vip)
	for _, act := range acts {
		switch act.Do {
		case l2owner.AnswerOff:
			s.quietUntil.Store(quietForever)
		case l2owner.AnswerOn:
			// Requests received before this node's next announcement
			// are left to the host that answered until then.
			if s.answering.Load() && !s.releasing {
				s.answeringFrom.Store(awaitingAnnouncement)
			}
			s.quietUntil.Store(0)
		case l2owner.AnswerNow:
			s.quietUntil.Store(0)
		case l2owner.Announce:
			if sk != nil && sk.announce != nil {
				sk.announce[vipOnLink{vip, iface}] = true
			} else if r := a.responderOf(iface, proto); r != nil {
				r.announce(vip)
			}
		case l2owner.AnnounceOnce:
			a.reassert(iface, proto, vip)
		case l2owner.Reassert:
			a.reassertBurst(iface, proto, vip, s)
		case l2owner.Ask:
			k := responderKey{iface, proto}
			if sk != nil && sk.asks != nil {
				sk.asks[k] = append(sk.asks[k], vip)
			} else {
				a.askAll(k, []netip.Addr{vip})
			}
		case l2owner.Wake:
			time.AfterFunc(act.At.Sub(now), func() { a.tick(o) })
		case l2owner.Defer:
			s.quietUntil.Store(act.At.UnixNano())
			a.log.Info("another speaker answers a VIP this node owned before its pause: staying silent until it gives the VIP up",
				"ip", vip, "interface", iface, "protocol", proto, "by", act.To)
		case l2owner.Fence:
			s.quietUntil.Store(act.At.UnixNano())
		case l2owner.Lift:
			a.lifted(iface, proto, vip, act.Why, watched)
		case l2owner.Yield:
			s.quietUntil.Store(0)
			s.answering.Store(false)
			a.handedOver(iface, proto, vip, mac(act.To))
		case l2owner.TellWinner:
			a.tellWinner(iface, proto, vip, mac(act.To))
		case l2owner.TellLoser:
			a.tellBeaten([]beatenVIP{{vipOnLink{vip, iface}, mac(act.To)}})
		case l2owner.Conflict:
			a.conflict(iface, proto, vip, mac(act.To), act.Why == "won")
		case l2owner.Foreign:
			a.foreignClaim(iface, proto, vip, mac(act.To), act.Report)
		case l2owner.Settling:
			a.log.Info("another host announced a VIP this node just claimed (hand-over in progress)", "ip", vip, "interface", iface, "protocol", proto, "by", act.To)
		}
	}
}

// lifted counts and logs a fence or deferral that ended (why: see
// l2owner.Lift).
func (a *Announcer) lifted(iface, proto string, vip netip.Addr, why, by string) {
	a.metrics.fenceLifted.WithLabelValues(iface, proto).Inc()
	msg := map[string]string{
		"gone":    "the host that won the fence no longer answers for the VIP: answering again",
		"gave-up": "the host that won the fence gave the VIP up: answering again",
		"foreign": "the host that won the fence runs no speaker: answering again",
		"handed":  "the speaker deferred to after a pause hands the VIP over: answering again",
		"healed":  "member list healed: lifted the fence for the VIP",
	}[why]
	if msg == "" {
		msg = "fence lifted: answering again"
	}
	a.log.Warn(msg, "ip", vip, "interface", iface, "protocol", proto, "winner", by)
}

// conflict counts, logs and reports (OnConflict) the fence's decision
// against the speaker by.
func (a *Announcer) conflict(iface, proto string, vip netip.Addr, by net.HardwareAddr, won bool) {
	result := "lost"
	if won {
		result = "won"
	}
	a.metrics.conflicts.WithLabelValues(iface, proto, result).Inc()
	a.log.Warn("another host announces a VIP this node announces", "ip", vip, "interface", iface, "protocol", proto, "by", by.String(), "result", result)
	if cb := a.cfg.OnConflict; cb != nil {
		by := slices.Clone(by)
		go cb(vip, iface, by, won)
	}
}

// foreignClaim counts an announcement of vip by a host that is no
// speaker's (by) and, when report, logs and reports it
// (OnForeignClaim).
func (a *Announcer) foreignClaim(iface, proto string, vip netip.Addr, by net.HardwareAddr, report bool) {
	a.metrics.foreignClaims.WithLabelValues(iface, proto).Inc()
	if !report {
		return
	}
	a.log.Warn("a host that runs no speaker announces a VIP this node announces: keeping it and announcing it again", "ip", vip, "interface", iface, "protocol", proto, "by", by.String())
	if cb := a.cfg.OnForeignClaim; cb != nil {
		by := slices.Clone(by)
		go cb(vip, iface, by)
	}
}

// askAll asks who answers each of vips on the responder k, in the
// background, once its sockets are open.
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
				a.log.Debug("cannot ask who answers a VIP", "ip", vip, "interface", k.iface, "error", err)
			}
		}
	}()
}

// mac parses a MAC the machine names (nil when it does not parse).
func mac(s string) net.HardwareAddr {
	m, _ := net.ParseMAC(s)
	return m
}
