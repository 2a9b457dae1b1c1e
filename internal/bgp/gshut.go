package bgp

import (
	"cmp"
	"net/netip"
)

// CommunityGracefulShutdown is the well-known GRACEFUL_SHUTDOWN community
// 65535:0 (RFC 8326): a router that honours it (FRR, and most vendors
// with a one-line policy) lowers the path's LOCAL_PREF to 0, so that it
// moves traffic to the other paths of the prefix before the withdrawal.
const CommunityGracefulShutdown uint32 = 0xFFFF0000 // 65535:0

// GracefulShutdownLocalPref is the LOCAL_PREF the paths carry on iBGP
// sessions during a graceful shutdown (RFC 8326 section 4: the sender
// lowers it itself where it may set it). RFC 8326 suggests 0; GoBGP's
// export policy reads a LOCAL_PREF action of 0 as no action, so 1, the
// lowest it sets, below every other path's default of 100.
const GracefulShutdownLocalPref uint32 = 1

// gshutScope is which sessions' paths carry the graceful-shutdown
// marking.
type gshutScope uint8

const (
	gshutNone gshutScope = iota
	// gshutStop: the speaker stops (SIGTERM). Sessions with graceful
	// restart keep their paths unmarked: their router keeps them, stale,
	// through the restart, and the marking would move the traffic away
	// for it (FRR drops the node from its FIB). Every other session is
	// marked, so its router moves new flows before the withdrawal.
	gshutStop
	// gshutDrain: the node drains (label herald.dev/drain) and will
	// withdraw everything: every session is marked, graceful restart or
	// not.
	gshutDrain
)

// gshutScopeOf is the marking of a node that drains (Desired's
// GracefulShutdown) and of a speaker that stops; a drain marks more.
func gshutScopeOf(drain, stopping bool) gshutScope {
	switch {
	case drain:
		return gshutDrain
	case stopping:
		return gshutStop
	}
	return gshutNone
}

// marks says whether s's paths carry the marking.
func (g gshutScope) marks(s Session) bool {
	switch g {
	case gshutDrain:
		return true
	case gshutStop:
		return !s.GracefulRestart
	}
	return false
}

// marksAny says whether the marking changes what some session receives:
// one of the deliveries goes to a session g marks. Without one, a
// stopping speaker has nothing to send first and no reason to wait.
func (g gshutScope) marksAny(sessions []Session, deliveries map[netip.Prefix]delivery) bool {
	for _, s := range sessions {
		if !g.marks(s) {
			continue
		}
		for _, d := range deliveries {
			if _, ok := d[s.PeerAddress]; ok {
				return true
			}
		}
	}
	return false
}

// gracefulShutdown marks the plan's deliveries to the sessions g marks:
// the GRACEFUL_SHUTDOWN community, and GracefulShutdownLocalPref on iBGP
// sessions (replacing the advertisements' localPref). The one place that
// changes path attributes for it.
func (p *pathPlan) gracefulShutdown(sessions []Session, g gshutScope) {
	type mark struct{ on, ibgp bool }
	marked := map[netip.Addr]mark{}
	for _, s := range sessions {
		marked[s.PeerAddress] = mark{on: g.marks(s), ibgp: s.ibgp()}
	}
	for _, del := range p.deliveries {
		for peer, a := range del {
			m := marked[peer]
			if !m.on {
				continue
			}
			a.communities = mergeSorted(a.communities, []uint32{CommunityGracefulShutdown}, cmp.Compare[uint32])
			if m.ibgp {
				a.localPref, a.hasLocalPref = GracefulShutdownLocalPref, true
			}
			del[peer] = a
		}
	}
}
