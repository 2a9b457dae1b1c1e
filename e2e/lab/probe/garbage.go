package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
)

// MalformedARP returns broadcast ARP frames from mac that no ARP parser
// accepts, each asking for target: protocol length 0, and truncated after
// the fixed header and in the middle of the sender's address.
func MalformedARP(mac net.HardwareAddr, sender, target netip.Addr) ([][]byte, error) {
	p, err := arp.NewPacket(arp.OperationRequest, mac, sender, net.HardwareAddr{0, 0, 0, 0, 0, 0}, target)
	if err != nil {
		return nil, err
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	good, err := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: payload}).MarshalBinary()
	if err != nil {
		return nil, err
	}
	const eth = 14
	plen0 := append([]byte(nil), good...)
	plen0[eth+5] = 0 // protocol address length
	return [][]byte{plen0, good[:eth+8], good[:eth+17]}, nil
}

// Garbage broadcasts n malformed ARP frames (MalformedARP, for target,
// from ifname's IPv4 address) every interval until ctx ends. It emits
// Line{Ready: true} once its socket is open.
func Garbage(ctx context.Context, ifname string, target netip.Addr, interval time.Duration, n int, emit func(Line)) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("interface %s: %w", ifname, err)
	}
	src, err := sourceAddr(ifi, true)
	if err != nil {
		return err
	}
	frames, err := MalformedARP(ifi.HardwareAddr, src, target)
	if err != nil {
		return err
	}
	conn, err := packet.Listen(ifi, packet.Raw, ethPARP, nil)
	if err != nil {
		return fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	defer conn.Close()
	emit(Line{Ready: true})
	to := &packet.Addr{HardwareAddr: ethernet.Broadcast}
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		for j := range n {
			if _, err := conn.WriteTo(frames[(i*n+j)%len(frames)], to); err != nil {
				return fmt.Errorf("sending malformed ARP on %s: %w", ifname, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
