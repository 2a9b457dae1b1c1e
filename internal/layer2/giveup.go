package layer2

import (
	"net"
)

// Telling a host that lost the fence that this node gave the VIP up (the
// machine's TellLoser; l2owner's fence.go says when and why): one frame
// to that host's MAC alone, an ARP probe (sender address 0.0.0.0) or a
// neighbour solicitation from the unspecified address, for the VIP. A
// host that probes an address does not claim it, and neither a kernel
// nor a client sends a probe to one MAC alone (theirs are broadcast or
// multicast), so the read path tells it apart (arpGaveUp, nsGaveUp) and
// feeds it to the loser's machine as GaveUp.

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
