package layer2

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"golang.org/x/net/bpf"
)

var (
	ourMAC    = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x11}
	clientMAC = net.HardwareAddr{0x02, 0, 0, 0, 1, 0}
	otherMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x12}
	vip4      = netip.MustParseAddr("198.51.100.70")
	vip6      = netip.MustParseAddr("2001:db8:1::70")
	client4   = netip.MustParseAddr("198.51.100.100")
	client6   = netip.MustParseAddr("2001:db8:1::100")
)

func ownsOnly(vips ...netip.Addr) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		for _, v := range vips {
			if a == v {
				return true
			}
		}
		return false
	}
}

func arpPacket(t testing.TB, op arp.Operation, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) *arp.Packet {
	t.Helper()
	p, err := arp.NewPacket(op, sha, spa, tha, tpa)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestARPRequestFor(t *testing.T) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	owns := ownsOnly(vip4)
	tests := []struct {
		name string
		pkt  *arp.Packet
		dst  net.HardwareAddr
		want bool
	}{
		{"broadcast request", arpPacket(t, arp.OperationRequest, clientMAC, client4, zero, vip4), ethernet.Broadcast, true},
		{"unicast request to our MAC (NUD)", arpPacket(t, arp.OperationRequest, clientMAC, client4, ourMAC, vip4), ourMAC, true},
		{"probe from 0.0.0.0 (RFC 5227)", arpPacket(t, arp.OperationRequest, clientMAC, netip.IPv4Unspecified(), zero, vip4), ethernet.Broadcast, true},
		{"unicast to another host", arpPacket(t, arp.OperationRequest, clientMAC, client4, otherMAC, vip4), otherMAC, false},
		{"not owned", arpPacket(t, arp.OperationRequest, clientMAC, client4, zero, netip.MustParseAddr("198.51.100.71")), ethernet.Broadcast, false},
		{"reply", arpPacket(t, arp.OperationReply, clientMAC, client4, ourMAC, vip4), ourMAC, false},
		{"our own frame", arpPacket(t, arp.OperationRequest, ourMAC, vip4, zero, vip4), ethernet.Broadcast, false},
		{"our own request for a VIP", arpPacket(t, arp.OperationRequest, ourMAC, client4, zero, vip4), ethernet.Broadcast, false},
		{"gratuitous request from another host", arpPacket(t, arp.OperationRequest, otherMAC, vip4, ethernet.Broadcast, vip4), ethernet.Broadcast, false},
		{"nil packet", nil, ethernet.Broadcast, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := arpRequestFor(tc.pkt, tc.dst, ourMAC, owns)
			if ok != tc.want || (ok && got != vip4) {
				t.Errorf("got %v %v, want %v", got, ok, tc.want)
			}
		})
	}
}

// nsBytes builds an Ethernet frame with an IPv6 neighbour solicitation.
func nsBytes(t testing.TB, srcMAC, dstMAC net.HardwareAddr, src, dst, target netip.Addr, hopLimit byte) []byte {
	t.Helper()
	msg, err := ndp.MarshalMessage(&ndp.NeighborSolicitation{
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: srcMAC}},
	})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(msg[2:4], 0)
	binary.BigEndian.PutUint16(msg[2:4], ^icmpv6Checksum(src, dst, msg))
	ip := make([]byte, ipv6HeaderLen)
	ip[0] = 6 << 4
	binary.BigEndian.PutUint16(ip[4:6], uint16(len(msg)))
	ip[6], ip[7] = protoICMPv6, hopLimit
	s, d := src.As16(), dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
	f := &ethernet.Frame{Destination: dstMAC, Source: srcMAC, EtherType: etherTypeIPv6, Payload: append(ip, msg...)}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseNSFrame(t *testing.T) {
	good := nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)
	f, err := parseNSFrame(good)
	if err != nil {
		t.Fatalf("valid frame: %v", err)
	}
	if f.src != client6 || f.dst != vip6 || f.ns.TargetAddress != vip6 || f.srcMAC.String() != clientMAC.String() {
		t.Fatalf("parsed %+v", f)
	}
	padded := append(append([]byte{}, good...), make([]byte, 30)...)
	if _, err := parseNSFrame(padded); err != nil {
		t.Errorf("frame with trailing padding: %v", err)
	}
	bad := map[string][]byte{
		"truncated":    good[:len(good)-20],
		"hop limit":    nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 254),
		"bad checksum": flip(good, offICMP+2),
		"code":         flip(good, offICMP+1),
		"next header":  flip(good, offNextHeader),
		"ethertype":    flip(good, 13),
		"version":      flip(good, ethHeaderLen),
		"payload len":  flip(good, ethHeaderLen+5),
		"empty":        nil,
	}
	for name, b := range bad {
		if _, err := parseNSFrame(b); !errors.Is(err, errNotNS) {
			t.Errorf("%s: got %v, want errNotNS", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x40
	return out
}

func TestUnicastNSFor(t *testing.T) {
	owns := ownsOnly(vip6)
	parse := func(b []byte) nsFrame {
		f, err := parseNSFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	other := netip.MustParseAddr("2001:db8:1::71")
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	tests := []struct {
		name string
		f    nsFrame
		want bool
	}{
		{"NUD probe to the VIP", parse(nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)), true},
		{"not owned", parse(nsBytes(t, clientMAC, ourMAC, client6, other, other, 255)), false},
		{"multicast (the ICMPv6 socket answers it)", parse(nsBytes(t, clientMAC, ourMAC, client6, snm, vip6, 255)), false},
		{"sent to another address", parse(nsBytes(t, clientMAC, ourMAC, client6, client6, vip6, 255)), false},
		{"from our MAC", parse(nsBytes(t, ourMAC, ourMAC, client6, vip6, vip6, 255)), false},
		{"empty", nsFrame{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := unicastNSFor(tc.f, ourMAC, owns)
			if ok != tc.want || (ok && got != vip6) {
				t.Errorf("got %v %v, want %v", got, ok, tc.want)
			}
		})
	}
}

// TestNSFilter runs the BPF program in the x/net/bpf VM. The VM has no
// packet type, so the PACKET_HOST check is replaced by a constant load.
func TestNSFilter(t *testing.T) {
	raw, err := nsFilter()
	if err != nil {
		t.Fatal(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("disassemble: %v", prog)
	}
	if _, isExt := prog[0].(bpf.LoadExtension); !isExt {
		t.Fatalf("first instruction %v, want the packet type load", prog[0])
	}
	prog[0] = bpf.LoadConstant{Dst: bpf.RegA, Val: packetHostType}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	ns := nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)
	na := append([]byte{}, ns...)
	na[offICMP] = 136
	arpFrame := append([]byte{}, ns...)
	arpFrame[12], arpFrame[13] = 0x08, 0x06
	for name, tc := range map[string]struct {
		frame []byte
		pass  bool
	}{"NS": {ns, true}, "NA": {na, false}, "ARP": {arpFrame, false}, "short": {ns[:20], false}} {
		n, err := vm.Run(tc.frame)
		if (n > 0) != tc.pass {
			t.Errorf("%s: accepted %d bytes (err %v), want pass=%v", name, n, err, tc.pass)
		}
	}
}
