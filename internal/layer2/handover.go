package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"slices"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
)

// Make-before-break hand-over, socket side: the node losing a VIP keeps
// answering for it (Announcement.Releasing) until the new owner announces
// itself, then stops at once (the machine's Yield). The frames are read
// and fed to the machine in the packet path, on the same socket as the
// requests: a request read before the new owner's gratuitous packet is
// answered, one read after it is not.

// handedOver counts, logs and reports (OnYield) that vip stopped being
// answered on iface because another host (by) took it over.
func (a *Announcer) handedOver(iface, proto string, vip netip.Addr, by net.HardwareAddr) {
	a.metrics.handovers.WithLabelValues(iface, proto).Inc()
	a.log.Info("VIP taken over by another host, stopped answering", "ip", vip, "interface", iface, "protocol", proto, "by", by.String())
	if cb := a.cfg.OnYield; cb != nil {
		by := slices.Clone(by)
		go cb(vip, iface, by)
	}
}

// arpTakeover decides whether pkt, read on an interface whose MAC is
// ourMAC in a frame from ethSrc, is another host's gratuitous ARP for a VIP
// this node announces (owns or releases: the predicate), and returns the
// VIP and the announcer's MAC. A
// gratuitous ARP is a request or reply whose sender and target IP are both
// the announced address; it must not come from us.
func arpTakeover(pkt *arp.Packet, ethSrc, ourMAC net.HardwareAddr, releasing func(netip.Addr) bool) (netip.Addr, net.HardwareAddr, bool) {
	if pkt == nil || (pkt.Operation != arp.OperationRequest && pkt.Operation != arp.OperationReply) {
		return netip.Addr{}, nil, false
	}
	vip := pkt.SenderIP
	if !vip.Is4() || vip != pkt.TargetIP {
		return netip.Addr{}, nil, false
	}
	by := pkt.SenderHardwareAddr
	if !isOtherHost(by, ourMAC) || bytes.Equal(ethSrc, ourMAC) || !releasing(vip) {
		return netip.Addr{}, nil, false
	}
	return vip, slices.Clone(by), true
}

// naTakeover decides whether na is another host's unsolicited neighbour
// advertisement (Solicited clear, Override set) for a VIP this node
// announces (the predicate), and returns the VIP and the advertised MAC: the target
// link-layer address option or, without one, srcMAC (the frame's source,
// nil when unknown). The caller checks the hop limit (255).
func naTakeover(na *ndp.NeighborAdvertisement, srcMAC, ourMAC net.HardwareAddr, releasing func(netip.Addr) bool) (netip.Addr, net.HardwareAddr, bool) {
	if na == nil || na.Solicited || !na.Override {
		return netip.Addr{}, nil, false
	}
	vip := na.TargetAddress.WithZone("")
	if !vip.Is6() || vip.Is4In6() || vip.IsMulticast() || vip.IsUnspecified() {
		return netip.Addr{}, nil, false
	}
	by := srcMAC
	for _, o := range na.Options {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
			by = lla.Addr
			break
		}
	}
	if !isOtherHost(by, ourMAC) || bytes.Equal(srcMAC, ourMAC) || !releasing(vip) {
		return netip.Addr{}, nil, false
	}
	return vip, slices.Clone(by), true
}

// isOtherHost reports whether mac is a plausible unicast Ethernet address
// of another host: six bytes, not all zero, not multicast or broadcast, not
// ours.
func isOtherHost(mac, ourMAC net.HardwareAddr) bool {
	if len(mac) != 6 || mac[0]&1 != 0 || bytes.Equal(mac, ourMAC) {
		return false
	}
	return !bytes.Equal(mac, net.HardwareAddr{0, 0, 0, 0, 0, 0})
}
