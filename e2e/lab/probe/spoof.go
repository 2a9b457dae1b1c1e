package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
)

// Spoof is a LAN host that tries to take addr (IPv4) from its owner
// without being a speaker: from ifname it sends one gratuitous ARP request
// claiming addr for the made-up MAC mac (also the frame's source), and
// then answers, in mac's name, every ARP probe for addr (sender address
// 0.0.0.0: a speaker's question of who answers, which its fence asks) with
// a reply sent to the prober alone. It answers nothing else, no client's
// request. It emits Line{Ready: true} once the gratuitous ARP is out, and
// runs until ctx ends.
func Spoof(ctx context.Context, ifname string, addr netip.Addr, mac net.HardwareAddr, emit func(Line)) error {
	if !addr.Is4() || len(mac) != 6 {
		return fmt.Errorf("spoof: want an IPv4 address and a 6-byte MAC, got %v %v", addr, mac)
	}
	_, conn, err := listenARP(ifname)
	if err != nil {
		return err
	}
	defer conn.Close()
	garp, err := garpFrame(mac, addr)
	if err != nil {
		return err
	}
	if _, err := conn.WriteTo(garp, &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
		return fmt.Errorf("claiming %v on %s: %w", addr, ifname, err)
	}
	emit(Line{Ready: true})
	return readARPRequests(ctx, conn, addr, func(req *arp.Packet) error {
		if !req.SenderIP.IsUnspecified() {
			return nil // a client's request, not a probe
		}
		return reply(conn, mac, addr, req)
	})
}
