package layer2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/bpf"
)

// Offsets in an Ethernet frame carrying IPv6 without extension headers.
const (
	etherTypeIPv6   = 0x86dd
	ethHeaderLen    = 14
	ipv6HeaderLen   = 40
	offNextHeader   = ethHeaderLen + 6
	offHopLimit     = ethHeaderLen + 7
	offSrc          = ethHeaderLen + 8
	offDst          = ethHeaderLen + 24
	offICMP         = ethHeaderLen + ipv6HeaderLen
	protoICMPv6     = 58
	icmpTypeNS      = 135
	icmpTypeNA      = 136
	nsMinLen        = 24 // type, code, checksum, reserved, target (NA alike)
	packetHostType  = 0  // PACKET_HOST: frame addressed to our MAC
	packetMcastType = 2  // PACKET_MULTICAST: frame to a multicast MAC
	bpfAcceptLength = 0x40000
)

var errNotNDP = errors.New("not a neighbor solicitation or advertisement")

// ndpFrame is a neighbour solicitation or advertisement read from a
// packet socket.
type ndpFrame struct {
	dstMAC net.HardwareAddr
	srcMAC net.HardwareAddr
	src    netip.Addr
	dst    netip.Addr
	ns     *ndp.NeighborSolicitation  // set for a solicitation
	na     *ndp.NeighborAdvertisement // set for an advertisement
}

// toUs reports whether the frame was sent to our MAC (not to a group).
func (f ndpFrame) toUs(ourMAC net.HardwareAddr) bool {
	return string(f.dstMAC) == string(ourMAC)
}

// ndpFilter is a BPF program that passes only frames received for this
// host, addressed to our MAC (PACKET_HOST) or to a multicast MAC
// (PACKET_MULTICAST: the solicited-node groups and all-nodes), that carry
// ICMPv6 neighbour solicitations or advertisements with no IPv6 extension
// header (neither ever carries one). Our own frames (PACKET_OUTGOING, and
// PACKET_LOOPBACK for multicast looped back) do not pass.
//
// Both kinds come through one socket so that they are read in the order
// the interface received them: a solicitation that arrived before the new
// owner's unsolicited advertisement is still answered by the node
// releasing the VIP, one that arrived after is not (its machine yields).
func ndpFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: packetHostType, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: packetMcastType, SkipTrue: 8},
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: etherTypeIPv6, SkipTrue: 6},
		bpf.LoadAbsolute{Off: offNextHeader, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protoICMPv6, SkipTrue: 4},
		bpf.LoadAbsolute{Off: offICMP, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: icmpTypeNS, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: icmpTypeNA, SkipTrue: 1},
		bpf.RetConstant{Val: bpfAcceptLength},
		bpf.RetConstant{Val: 0},
	})
}

// parseNDPFrame parses an Ethernet frame holding an IPv6 neighbour
// solicitation or advertisement and validates it as RFC 4861 sections
// 7.1.1 and 7.1.2 ask: hop limit 255, ICMP code 0, a correct checksum.
func parseNDPFrame(b []byte) (ndpFrame, error) {
	if len(b) < offICMP+nsMinLen {
		return ndpFrame{}, fmt.Errorf("frame of %d bytes: %w", len(b), errNotNDP)
	}
	if binary.BigEndian.Uint16(b[12:14]) != etherTypeIPv6 || b[ethHeaderLen]>>4 != 6 {
		return ndpFrame{}, fmt.Errorf("not IPv6: %w", errNotNDP)
	}
	if b[offNextHeader] != protoICMPv6 {
		return ndpFrame{}, fmt.Errorf("next header %d: %w", b[offNextHeader], errNotNDP)
	}
	if b[offHopLimit] != 255 {
		return ndpFrame{}, fmt.Errorf("hop limit %d: %w", b[offHopLimit], errNotNDP)
	}
	plen := int(binary.BigEndian.Uint16(b[ethHeaderLen+4 : ethHeaderLen+6]))
	if plen < nsMinLen || offICMP+plen > len(b) {
		return ndpFrame{}, fmt.Errorf("payload length %d in a frame of %d bytes: %w", plen, len(b), errNotNDP)
	}
	icmp := b[offICMP : offICMP+plen]
	if (icmp[0] != icmpTypeNS && icmp[0] != icmpTypeNA) || icmp[1] != 0 {
		return ndpFrame{}, fmt.Errorf("ICMPv6 type %d code %d: %w", icmp[0], icmp[1], errNotNDP)
	}
	src := netip.AddrFrom16([16]byte(b[offSrc : offSrc+16]))
	dst := netip.AddrFrom16([16]byte(b[offDst : offDst+16]))
	if icmpv6Checksum(src, dst, icmp) != 0xffff {
		return ndpFrame{}, fmt.Errorf("bad ICMPv6 checksum: %w", errNotNDP)
	}
	m, err := ndp.ParseMessage(icmp)
	if err != nil {
		return ndpFrame{}, fmt.Errorf("%w: %w", errNotNDP, err)
	}
	f := ndpFrame{dstMAC: net.HardwareAddr(slices.Clone(b[0:6])), srcMAC: net.HardwareAddr(slices.Clone(b[6:12])), src: src, dst: dst}
	switch m := m.(type) {
	case *ndp.NeighborSolicitation:
		f.ns = m
	case *ndp.NeighborAdvertisement:
		f.na = m
	default:
		return ndpFrame{}, errNotNDP
	}
	return f, nil
}

// marshalNDPFrame builds the Ethernet frame of an NDP message from src to
// dst (hop limit 255, checksum set), for a packet socket to send: the one
// way to send an IPv6 multicast to a single host's MAC.
func marshalNDPFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr, m ndp.Message) ([]byte, error) {
	msg, err := ndp.MarshalMessage(m)
	if err != nil {
		return nil, fmt.Errorf("marshal NDP message: %w", err)
	}
	if len(srcMAC) != 6 || len(dstMAC) != 6 || !src.Is6() || !dst.Is6() {
		return nil, fmt.Errorf("NDP frame from %s (%s) to %s (%s): need IPv6 and Ethernet addresses", src, srcMAC, dst, dstMAC)
	}
	binary.BigEndian.PutUint16(msg[2:4], 0)
	binary.BigEndian.PutUint16(msg[2:4], ^icmpv6Checksum(src, dst, msg))
	b := make([]byte, offICMP, offICMP+len(msg))
	copy(b[0:6], dstMAC)
	copy(b[6:12], srcMAC)
	binary.BigEndian.PutUint16(b[12:14], etherTypeIPv6)
	b[ethHeaderLen] = 6 << 4
	binary.BigEndian.PutUint16(b[ethHeaderLen+4:ethHeaderLen+6], uint16(len(msg)))
	b[offNextHeader], b[offHopLimit] = protoICMPv6, 255
	s, d := src.As16(), dst.As16()
	copy(b[offSrc:offSrc+16], s[:])
	copy(b[offDst:offDst+16], d[:])
	return append(b, msg...), nil
}

// icmpv6Checksum returns the ones' complement sum of the IPv6 pseudo-header
// and msg; it is 0xffff when msg carries a correct checksum.
func icmpv6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	var sum uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			sum += uint32(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) == 1 {
			sum += uint32(b[0]) << 8
		}
	}
	s, d := src.As16(), dst.As16()
	add(s[:])
	add(d[:])
	var tail [8]byte
	binary.BigEndian.PutUint32(tail[:4], uint32(len(msg)))
	tail[7] = protoICMPv6
	add(tail[:])
	add(msg)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return uint16(sum)
}

// nsGaveUp decides whether a frame from the packet socket is another
// host's neighbour solicitation from the unspecified address sent to this
// node's MAC alone: that host gave up the VIP it asks for (giveUp). It
// returns the VIP.
func nsGaveUp(f ndpFrame, ourMAC net.HardwareAddr) (netip.Addr, bool) {
	if f.ns == nil || !f.toUs(ourMAC) || !f.src.IsUnspecified() || !isOtherHost(f.srcMAC, ourMAC) {
		return netip.Addr{}, false
	}
	vip := f.ns.TargetAddress.WithZone("")
	if !vip.Is6() || vip.IsMulticast() || vip.IsUnspecified() || vip.IsLinkLocalUnicast() {
		return netip.Addr{}, false
	}
	return vip, true
}

// nsFor decides whether a frame from the packet socket is a solicitation
// this node must answer, for which VIP, and what kind it is: "unicast"
// (neighbour unreachability detection, sent to the VIP itself) or
// "multicast" (address resolution and DAD, sent to a link-local multicast
// group, normally the VIP's solicited-node group). It must not come from
// our MAC, and the VIP must be ours.
func nsFor(f ndpFrame, ourMAC net.HardwareAddr, owns func(netip.Addr) bool) (netip.Addr, string, bool) {
	if f.ns == nil || string(f.srcMAC) == string(ourMAC) {
		return netip.Addr{}, "", false
	}
	vip := f.ns.TargetAddress
	if !vip.Is6() || vip.IsMulticast() || !owns(vip) {
		return netip.Addr{}, "", false
	}
	switch {
	case f.dst == vip:
		return vip, "unicast", true
	case f.dst.IsLinkLocalMulticast():
		return vip, "multicast", true
	}
	return netip.Addr{}, "", false
}
