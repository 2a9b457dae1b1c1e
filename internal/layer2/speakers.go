package layer2

import (
	"net"
	"net/netip"
)

// Which hosts the fence yields to. The fence exists for split brain
// between two speakers, and only another speaker's node may make this one
// stop answering: any host on the segment can send a gratuitous ARP from a
// made-up MAC that outranks this node's in l2owner.Wins, and then answer
// this node's verification: yielding to it leaves the address dark for as
// long as that host keeps doing so. So the speaker tells the announcer the
// MACs of the other speakers' nodes (SetSpeakerMACs), every event fed to
// a machine says whether its host is one (l2owner.Event.Speaker), and an
// announcement of an owned VIP from any other MAC is a foreign claim:
// counted, reported (Config.OnForeignClaim), answered with a gratuitous
// burst of this node's own so that clients' caches point here again
// (reassertBurst), and never yielded to.
//
// Until the speaker says the set is complete (every other node that may
// run a speaker has published its MACs), every MAC counts as a speaker's,
// as before: a speaker that has not learned another's MACs yet (it just
// started, the other runs an older version, or was never heard) must still
// resolve a genuine split brain with it.

// speakerMACs is the set of the other speakers' MACs the fence yields to.
type speakerMACs struct {
	macs     map[string]bool // by net.HardwareAddr.String()
	complete bool
}

// SetSpeakerMACs sets the MACs of the other speakers' nodes. With complete
// false (or before the first call) the fence yields to any host, as it
// did before it knew them. A fence lost to a host that is no longer
// counted a speaker is lifted at its next verification.
func (a *Announcer) SetSpeakerMACs(macs []net.HardwareAddr, complete bool) {
	set := make(map[string]bool, len(macs))
	for _, m := range macs {
		set[m.String()] = true
	}
	a.speakers.Store(&speakerMACs{macs: set, complete: complete})
}

// fromSpeaker reports whether the fence may yield to the host with MAC by:
// it is another speaker's, or the set of those is not complete yet.
func (a *Announcer) fromSpeaker(by net.HardwareAddr) bool {
	sp := a.speakers.Load()
	return sp == nil || !sp.complete || sp.macs[by.String()]
}

// reassertBurst announces vip on iface at once and, unless such a burst
// runs already for the state s, follows with the rest of a gratuitous
// burst (Config.Gratuitous): a client's neighbour cache ignores an update
// that comes within its lock time (Linux: 1 s) of the foreign one, so the
// burst's later packets are those that move it back. One burst at a time
// per VIP state: a host that repeats its claim gets one packet for each
// frame, not one burst.
func (a *Announcer) reassertBurst(iface, proto string, vip netip.Addr, s *vipState) {
	r := a.responderOf(iface, proto)
	if r == nil {
		return
	}
	if !s.reasserting.CompareAndSwap(false, true) {
		a.reassert(iface, proto, vip)
		return
	}
	go func() {
		defer s.reasserting.Store(false)
		if r.awaitOpen() {
			r.sendBurst(r.ctx, vip)
		}
	}()
}
