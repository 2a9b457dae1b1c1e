package layer2

import (
	"net"
)

// Telling the fence's loser that the winner gave the VIP up (the machine's
// TellLoser; its rule is l2owner's). The loser of a fence stays silent
// while it hears the winner. When the
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
// claim counts as new); the winner, releasing, answers
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
