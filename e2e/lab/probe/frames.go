package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

const (
	ipv6HeaderLen = 40
	protoICMPv6   = 58
)

// arpRequest builds a broadcast ARP who-has frame.
func arpRequest(srcMAC net.HardwareAddr, src, target netip.Addr) ([]byte, error) {
	p, err := arp.NewPacket(arp.OperationRequest, srcMAC, src, ethernet.Broadcast, target)
	if err != nil {
		return nil, fmt.Errorf("ARP request for %v: %w", target, err)
	}
	payload, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: srcMAC, EtherType: ethernet.EtherTypeARP, Payload: payload}
	return f.MarshalBinary()
}

// nsFrame builds a neighbor solicitation for target from src, sent to dst
// (the solicited-node group or the target itself) at Ethernet dstMAC.
func nsFrame(srcMAC, dstMAC net.HardwareAddr, src, dst, target netip.Addr) ([]byte, error) {
	m := &ndp.NeighborSolicitation{
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: srcMAC}},
	}
	return icmpFrame(m, srcMAC, dstMAC, src, dst)
}

// icmpFrame wraps an NDP message in IPv6 (hop limit 255, as NDP requires)
// and Ethernet.
func icmpFrame(m ndp.Message, srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr) ([]byte, error) {
	icmp, err := ndp.MarshalMessageChecksum(m, src, dst)
	if err != nil {
		return nil, fmt.Errorf("NDP message to %v: %w", dst, err)
	}
	pkt := make([]byte, ipv6HeaderLen, ipv6HeaderLen+len(icmp))
	pkt[0] = 6 << 4
	binary.BigEndian.PutUint16(pkt[4:6], uint16(len(icmp)))
	pkt[6] = protoICMPv6
	pkt[7] = 255
	s16, d16 := src.As16(), dst.As16()
	copy(pkt[8:24], s16[:])
	copy(pkt[24:40], d16[:])
	pkt = append(pkt, icmp...)
	f := ethernet.Frame{Destination: dstMAC, Source: srcMAC, EtherType: ethernet.EtherTypeIPv6, Payload: pkt}
	return f.MarshalBinary()
}

// multicastMAC is the Ethernet group address of an IPv6 multicast address.
func multicastMAC(group netip.Addr) net.HardwareAddr {
	b := group.As16()
	return net.HardwareAddr{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// parsedNDP is an NDP message with the headers around it.
type parsedNDP struct {
	eth      *ethernet.Frame
	src, dst netip.Addr
	msg      ndp.Message
}

var errNotNDP = errors.New("not an NDP message")

// parseNDP decodes an Ethernet frame carrying an NDP message (no IPv6
// extension headers: neighbor discovery never uses them).
func parseNDP(b []byte) (parsedNDP, error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return parsedNDP{}, err
	}
	if f.EtherType != ethernet.EtherTypeIPv6 || len(f.Payload) < ipv6HeaderLen {
		return parsedNDP{}, errNotNDP
	}
	h, err := ipv6.ParseHeader(f.Payload)
	if err != nil || h.NextHeader != protoICMPv6 || h.HopLimit != 255 {
		return parsedNDP{}, errNotNDP
	}
	end := ipv6HeaderLen + h.PayloadLen
	if end > len(f.Payload) {
		return parsedNDP{}, errNotNDP
	}
	msg, err := ndp.ParseMessage(f.Payload[ipv6HeaderLen:end])
	if err != nil {
		return parsedNDP{}, errNotNDP
	}
	src, _ := netip.AddrFromSlice(h.Src)
	dst, _ := netip.AddrFromSlice(h.Dst)
	return parsedNDP{eth: &f, src: src, dst: dst, msg: msg}, nil
}

// parseARP decodes an Ethernet frame carrying ARP.
func parseARP(b []byte) (*arp.Packet, *ethernet.Frame, error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return nil, nil, err
	}
	if f.EtherType != ethernet.EtherTypeARP {
		return nil, nil, errors.New("not ARP")
	}
	var p arp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil {
		return nil, nil, err
	}
	return &p, &f, nil
}

// targetMAC is the NA's target link-layer address option, or "".
func targetMAC(na *ndp.NeighborAdvertisement) string {
	for _, o := range na.Options {
		if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
			return lla.Addr.String()
		}
	}
	return ""
}
