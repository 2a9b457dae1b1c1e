package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

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
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("interface %s: %w", ifname, err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, ethPARP, nil)
	if err != nil {
		return fmt.Errorf("raw socket on %s: %w", ifname, err)
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
	buf := make([]byte, 1600)
	for ctx.Err() == nil {
		if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			return err
		}
		n, _, err := conn.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return err
		}
		pkt, _, err := parseARP(buf[:n])
		if err != nil || pkt.Operation != arp.OperationRequest || pkt.TargetIP != addr || !pkt.SenderIP.IsUnspecified() {
			continue
		}
		if err := spoofReply(conn, mac, addr, pkt.SenderHardwareAddr); err != nil {
			return err
		}
	}
	return nil
}

// spoofReply answers a probe for addr from the host with MAC to, in the
// name of mac.
func spoofReply(conn *packet.Conn, mac net.HardwareAddr, addr netip.Addr, to net.HardwareAddr) error {
	p, err := arp.NewPacket(arp.OperationReply, mac, addr, to, netip.IPv4Unspecified())
	if err != nil {
		return err
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	f, err := (&ethernet.Frame{Destination: to, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: payload}).MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := conn.WriteTo(f, &packet.Addr{HardwareAddr: to}); err != nil {
		return fmt.Errorf("answering a probe for %v: %w", addr, err)
	}
	return nil
}
