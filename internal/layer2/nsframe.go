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
	nsMinLen        = 24 // type, code, checksum, reserved, target
	packetHostType  = 0  // PACKET_HOST: frame addressed to our MAC
	bpfAcceptLength = 0x40000
)

var errNotNS = errors.New("not a neighbor solicitation")

// nsFrame is a neighbour solicitation read from a packet socket.
type nsFrame struct {
	srcMAC net.HardwareAddr
	src    netip.Addr
	dst    netip.Addr
	ns     *ndp.NeighborSolicitation
}

// nsFilter is a BPF program that passes only frames addressed to our MAC
// (PACKET_HOST) that carry ICMPv6 neighbour solicitations with no IPv6
// extension header (NS never carry one).
func nsFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: packetHostType, SkipTrue: 7},
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: etherTypeIPv6, SkipTrue: 5},
		bpf.LoadAbsolute{Off: offNextHeader, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protoICMPv6, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offICMP, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: icmpTypeNS, SkipTrue: 1},
		bpf.RetConstant{Val: bpfAcceptLength},
		bpf.RetConstant{Val: 0},
	})
}

// parseNSFrame parses an Ethernet frame holding an IPv6 neighbour
// solicitation and validates it as RFC 4861 section 7.1.1 asks: hop limit
// 255, ICMP code 0, a correct checksum.
func parseNSFrame(b []byte) (nsFrame, error) {
	if len(b) < offICMP+nsMinLen {
		return nsFrame{}, fmt.Errorf("frame of %d bytes: %w", len(b), errNotNS)
	}
	if binary.BigEndian.Uint16(b[12:14]) != etherTypeIPv6 || b[ethHeaderLen]>>4 != 6 {
		return nsFrame{}, fmt.Errorf("not IPv6: %w", errNotNS)
	}
	if b[offNextHeader] != protoICMPv6 {
		return nsFrame{}, fmt.Errorf("next header %d: %w", b[offNextHeader], errNotNS)
	}
	if b[offHopLimit] != 255 {
		return nsFrame{}, fmt.Errorf("hop limit %d: %w", b[offHopLimit], errNotNS)
	}
	plen := int(binary.BigEndian.Uint16(b[ethHeaderLen+4 : ethHeaderLen+6]))
	if plen < nsMinLen || offICMP+plen > len(b) {
		return nsFrame{}, fmt.Errorf("payload length %d in a frame of %d bytes: %w", plen, len(b), errNotNS)
	}
	icmp := b[offICMP : offICMP+plen]
	if icmp[0] != icmpTypeNS || icmp[1] != 0 {
		return nsFrame{}, fmt.Errorf("ICMPv6 type %d code %d: %w", icmp[0], icmp[1], errNotNS)
	}
	src := netip.AddrFrom16([16]byte(b[offSrc : offSrc+16]))
	dst := netip.AddrFrom16([16]byte(b[offDst : offDst+16]))
	if icmpv6Checksum(src, dst, icmp) != 0xffff {
		return nsFrame{}, fmt.Errorf("bad ICMPv6 checksum: %w", errNotNS)
	}
	m, err := ndp.ParseMessage(icmp)
	if err != nil {
		return nsFrame{}, fmt.Errorf("%w: %w", errNotNS, err)
	}
	ns, ok := m.(*ndp.NeighborSolicitation)
	if !ok {
		return nsFrame{}, errNotNS
	}
	return nsFrame{srcMAC: net.HardwareAddr(slices.Clone(b[6:12])), src: src, dst: dst, ns: ns}, nil
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

// unicastNSFor decides whether a frame from the packet socket is a unicast
// solicitation this node must answer (neighbour unreachability detection:
// the kernel never hands it to the ICMPv6 socket because the VIP is not a
// local address), and for which VIP. It must be sent to the VIP itself,
// not by us, for a VIP we own.
func unicastNSFor(f nsFrame, ourMAC net.HardwareAddr, owns func(netip.Addr) bool) (netip.Addr, bool) {
	if f.ns == nil || string(f.srcMAC) == string(ourMAC) {
		return netip.Addr{}, false
	}
	vip := f.ns.TargetAddress
	if f.dst != vip || !vip.Is6() || vip.IsMulticast() || !owns(vip) {
		return netip.Addr{}, false
	}
	return vip, true
}
