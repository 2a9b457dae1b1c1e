package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"time"
)

// Telling the fence's loser that the winner gave the VIP up. The loser of a
// fence stays silent while it hears the winner (see fence). When the
// winner stops advertising the VIP (it hands it over, or no longer
// announces it there) the loser would learn of it only at its next fence
// verification, up to 1.5 × Config.FenceVerify later, and meanwhile nobody
// answers once the winner yields or stops. This happens when the winner
// had taken the VIP by mistake: a node starved of CPU declares the owner
// dead, claims its VIPs, wins the fence against the owner, and hands the
// VIPs back once it hears the owner again, while the owner, which saw
// nothing change, sits fenced.
//
// So the winner tells each host it beat, in one frame to that host's MAC
// alone: an ARP probe (sender address 0.0.0.0) or a neighbour solicitation
// from the unspecified address, for the VIP. A host that probes an address
// does not claim it, and neither a kernel nor a client sends a probe to
// one MAC alone (theirs are broadcast or multicast). The loser, fenced for
// that winner, lifts its fence and announces the VIP at once (a lifted
// claim counts as new, see LiftFences); the winner, releasing, answers
// until it reads that announcement and yields (make-before-break). A loser
// already answering again announces the VIP too, at most once per
// Config.FenceVerify, so that the releasing winner yields to it. The fence
// verification stays the fallback when the frame is lost.

// beatenVIP is a VIP on an interface this node stopped advertising (it
// turned releasing, or is not announced there any more) after it won the
// fence for it against the host with MAC beaten.
type beatenVIP struct {
	vipOnLink
	beaten net.HardwareAddr
}

// tellBeaten tells each beaten host that this node gave the VIP up. It
// sends at once, not in the background: a VIP no longer announced on an
// interface may be the last, and its responder is closed next.
func (a *Announcer) tellBeaten(gaveUp []beatenVIP) {
	for _, g := range gaveUp {
		proto := protocolOf(g.vip)
		r := a.responderOf(g.iface, proto)
		if r == nil || !r.opened() {
			continue
		}
		if err := r.p.giveUp(g.vip, g.beaten); err != nil {
			a.log.Warn("cannot tell the host that lost the fence that this node gave the VIP up", "ip", g.vip, "interface", g.iface, "protocol", proto, "loser", g.beaten.String(), "error", err)
			continue
		}
		a.log.Info("told the host that lost the fence that this node gave the VIP up", "ip", g.vip, "interface", g.iface, "protocol", proto, "loser", g.beaten.String())
	}
}

// gaveUp handles another host's probe for vip sent to this node alone: the
// winner of a fence (by) telling this node, the loser, that it gave the VIP
// up (tellBeaten). A VIP fenced for that host is lifted and announced at
// once; one owned and answered already is announced again, at most once
// per Config.FenceVerify, for the winner to yield to. Anything else (a VIP
// released or not announced here, fenced for another host) is ignored.
func (a *Announcer) gaveUp(iface, proto string, vip netip.Addr, by net.HardwareAddr) {
	s := a.owned.Load().state(iface, vip)
	if s == nil || s.releasing || s.silent.Load() { // silent: asking after a pause (pause.go)
		return
	}
	now := time.Now()
	if w := s.fenceWinner(now); w != nil {
		if !bytes.Equal(w, by) {
			return
		}
		s.liftFence(now, a.responderOf(iface, proto) != nil)
		a.metrics.fenceLifted.WithLabelValues(iface, proto).Inc()
		a.log.Warn("the host that won the fence gave the VIP up: answering again", "ip", vip, "interface", iface, "protocol", proto, "winner", by.String())
		a.reassert(iface, proto, vip)
		return
	}
	if s.answering.Load() && onceEvery(&s.gaveUpAt, now, a.cfg.FenceVerify) {
		a.reassert(iface, proto, vip)
	}
}
