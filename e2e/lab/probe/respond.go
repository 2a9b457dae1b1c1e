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

// Respond answers from ifname, in user space as a speaker does, every ARP
// request for addr (IPv4) with the interface's own MAC, in a reply sent
// to the requester alone. It is a control for the tests that measure the
// speakers' answers: a process scheduled like them that no hand-over
// moves. It emits Line{Ready: true} once listening, and runs until ctx
// ends.
func Respond(ctx context.Context, ifname string, addr netip.Addr, emit func(Line)) error {
	if !addr.Is4() {
		return fmt.Errorf("respond: want an IPv4 address, got %v", addr)
	}
	ifi, conn, err := listenARP(ifname)
	if err != nil {
		return err
	}
	defer conn.Close()
	emit(Line{Ready: true})
	return readARPRequests(ctx, conn, addr, func(req *arp.Packet) error {
		if req.SenderIP == addr {
			return nil
		}
		return reply(conn, ifi.HardwareAddr, addr, req)
	})
}

// listenARP opens a raw socket for ARP frames on ifname.
func listenARP(ifname string) (*net.Interface, *packet.Conn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, nil, fmt.Errorf("interface %s: %w", ifname, err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, ethPARP, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("raw socket on %s: %w", ifname, err)
	}
	return ifi, conn, nil
}

// readARPRequests calls handle with every ARP request for addr that
// arrives on conn, until ctx ends (nil) or reading or handle fails.
func readARPRequests(ctx context.Context, conn *packet.Conn, addr netip.Addr, handle func(*arp.Packet) error) error {
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
		if err != nil || pkt.Operation != arp.OperationRequest || pkt.TargetIP != addr {
			continue
		}
		if err := handle(pkt); err != nil {
			return err
		}
	}
	return nil
}

// reply answers the ARP request req for addr in the name of mac, to the
// requester alone.
func reply(conn *packet.Conn, mac net.HardwareAddr, addr netip.Addr, req *arp.Packet) error {
	p, err := arp.NewPacket(arp.OperationReply, mac, addr, req.SenderHardwareAddr, req.SenderIP)
	if err != nil {
		return err
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	f, err := (&ethernet.Frame{Destination: req.SenderHardwareAddr, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: payload}).MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := conn.WriteTo(f, &packet.Addr{HardwareAddr: req.SenderHardwareAddr}); err != nil {
		return fmt.Errorf("answering for %v: %w", addr, err)
	}
	return nil
}
