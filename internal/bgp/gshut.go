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

// gracefulShutdown marks every delivery of the plan for a graceful
// shutdown: the GRACEFUL_SHUTDOWN community on every session, and
// GracefulShutdownLocalPref on iBGP ones (replacing the advertisements'
// localPref). The one place that changes path attributes for it.
func (p *pathPlan) gracefulShutdown(sessions []Session) {
	ibgp := map[netip.Addr]bool{}
	for _, s := range sessions {
		ibgp[s.PeerAddress] = s.ibgp()
	}
	for _, del := range p.deliveries {
		for peer, a := range del {
			a.communities = mergeSorted(a.communities, []uint32{CommunityGracefulShutdown}, cmp.Compare[uint32])
			if ibgp[peer] {
				a.localPref, a.hasLocalPref = GracefulShutdownLocalPref, true
			}
			del[peer] = a
		}
	}
}
