package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ndp"
)

// Make-before-break hand-over: the node losing a VIP keeps answering for it
// (Announcement.Releasing) until the new owner announces itself, then stops
// at once. The decision is taken in the packet path, on the same socket as
// the requests: a request read before the new owner's gratuitous packet is
// answered, one read after it is not.

// contestedMemory is how long another host's gratuitous announcement of a
// VIP this node still owns is remembered: when the VIP turns releasing
// within that time, the new owner has already announced itself (it learned
// of the change first) and this node stops answering at once instead of
// waiting for the next announcement of the burst (a second later).
const contestedMemory = 3 * time.Second

// foreignAnnouncement handles another host's gratuitous ARP or unsolicited
// NA for vip, read on iface: a releasing VIP is yielded; an owned one is
// remembered as contested (see contestedMemory) and, when owned long
// enough, fenced (see fence). An announcement by a host that runs no
// speaker is neither remembered nor counted as heard (it must not keep a
// fence up); the fence reports it and announces the VIP again (see
// foreignClaim).
func (a *Announcer) foreignAnnouncement(iface, proto string, vip netip.Addr, ourMAC, by net.HardwareAddr) {
	if a.pauseHeard(iface, vip, by) {
		return // back from a pause, asking who answers (pause.go)
	}
	if a.yield(iface, proto, vip, by) {
		return
	}
	s := a.owned.Load().state(iface, vip)
	if s == nil || s.releasing {
		return
	}
	if a.fromSpeaker(by) {
		s.markHeard()
		a.contested.Store(vipOnLink{vip, iface}, contested{at: time.Now(), by: slices.Clone(by)})
	}
	if !a.fence(iface, proto, vip, ourMAC, by) {
		a.log.Info("another host announced a VIP this node just claimed (hand-over in progress)", "ip", vip, "interface", iface, "protocol", proto, "by", by.String())
	}
}

// contested records another host announcing a VIP this node owned.
type contested struct {
	at time.Time
	by net.HardwareAddr
}

// turnedVIP is a VIP on an interface that turned from owned to
// releasing; fencedBy is the MAC of the host it was fenced for then (nil:
// it was not fenced), beaten the MAC of the last host this node won the
// fence against (nil: none).
type turnedVIP struct {
	vipOnLink
	fencedBy net.HardwareAddr
	beaten   net.HardwareAddr
}

// yieldContestedLocked yields at once the VIPs that just turned releasing
// on an interface where their new owner was already heard announcing them,
// and reports as handed over those that were fenced (silent already: the
// host that won the fence answers them; see nextVIPState). A host this
// node beat in the fence was silent since, whatever it announced before:
// the VIP is answered here until that host, told (tellBeaten), announces
// it again.
func (a *Announcer) yieldContestedLocked(turned []turnedVIP, now time.Time) {
	for _, t := range turned {
		k := t.vipOnLink
		v, ok := a.contested.LoadAndDelete(k)
		if t.fencedBy != nil {
			a.handedOver(k.iface, protocolOf(k.vip), k.vip, t.fencedBy)
			continue
		}
		if !ok {
			continue
		}
		c := v.(contested)
		if now.Sub(c.at) > contestedMemory || bytes.Equal(c.by, t.beaten) {
			continue
		}
		a.yield(k.iface, protocolOf(k.vip), k.vip, c.by)
	}
}

// yield marks vip as taken over on iface by the host with MAC by, if it is
// still being released there. It reports whether it did; only the first
// announcement counts, so OnYield and the metric fire once per hand-over.
func (a *Announcer) yield(iface, proto string, vip netip.Addr, by net.HardwareAddr) bool {
	s := a.owned.Load().state(iface, vip)
	if s == nil || !s.releasing || !s.answering.CompareAndSwap(true, false) {
		return false
	}
	a.handedOver(iface, proto, vip, by)
	return true
}

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
