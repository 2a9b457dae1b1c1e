package layer2

import (
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
	return ndpBytes(t, srcMAC, dstMAC, src, dst, &ndp.NeighborSolicitation{
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: srcMAC}},
	}, hopLimit)
}

// unsolicitedNABytes builds the frame of srcMAC's unsolicited NA for
// target, with the override flag, to all nodes.
func unsolicitedNABytes(t testing.TB, srcMAC net.HardwareAddr, target netip.Addr) []byte {
	t.Helper()
	src := netip.MustParseAddr("fe80::ff:fe00:99")
	return ndpBytes(t, srcMAC, net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, src, netip.IPv6LinkLocalAllNodes(),
		unsolicitedNA(target, false, true, tll(srcMAC)), 255)
}

// ndpBytes builds an Ethernet frame with an NDP message and the given hop
// limit (not covered by the checksum).
func ndpBytes(t testing.TB, srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr, m ndp.Message, hopLimit byte) []byte {
	t.Helper()
	b, err := marshalNDPFrame(srcMAC, dstMAC, src, dst, m)
	if err != nil {
		t.Fatal(err)
	}
	b[offHopLimit] = hopLimit
	return b
}

func TestParseNDPFrame(t *testing.T) {
	good := nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)
	f, err := parseNDPFrame(good)
	if err != nil {
		t.Fatalf("valid frame: %v", err)
	}
	if f.src != client6 || f.dst != vip6 || f.ns == nil || f.na != nil || f.ns.TargetAddress != vip6 || f.srcMAC.String() != clientMAC.String() {
		t.Fatalf("parsed %+v", f)
	}
	f, err = parseNDPFrame(unsolicitedNABytes(t, otherMAC, vip6))
	if err != nil {
		t.Fatalf("valid NA frame: %v", err)
	}
	if f.na == nil || f.ns != nil || f.na.TargetAddress != vip6 || f.na.Solicited || f.dst != netip.IPv6LinkLocalAllNodes() || f.srcMAC.String() != otherMAC.String() {
		t.Fatalf("parsed NA %+v", f)
	}
	padded := append(append([]byte{}, good...), make([]byte, 30)...)
	if _, err := parseNDPFrame(padded); err != nil {
		t.Errorf("frame with trailing padding: %v", err)
	}
	bad := map[string][]byte{
		"truncated":           good[:len(good)-20],
		"hop limit":           nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 254),
		"bad checksum":        flip(good, offICMP+2),
		"code":                flip(good, offICMP+1),
		"next header":         flip(good, offNextHeader),
		"ethertype":           flip(good, 13),
		"version":             flip(good, ethHeaderLen),
		"payload len":         flip(good, ethHeaderLen+5),
		"NA hop limit":        ndpBytes(t, otherMAC, ourMAC, client6, vip6, unsolicitedNA(vip6, false, true, tll(otherMAC)), 64),
		"router solicitation": ndpBytes(t, clientMAC, ourMAC, client6, vip6, &ndp.RouterSolicitation{}, 255),
		"empty":               nil,
	}
	for name, b := range bad {
		if _, err := parseNDPFrame(b); !errors.Is(err, errNotNDP) {
			t.Errorf("%s: got %v, want errNotNDP", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x40
	return out
}

func TestNSFor(t *testing.T) {
	owns := ownsOnly(vip6)
	parse := func(b []byte) ndpFrame {
		f, err := parseNDPFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	other := netip.MustParseAddr("2001:db8:1::71")
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	global := netip.MustParseAddr("ff0e::1")
	mcastMAC := net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x70}
	tests := []struct {
		name string
		f    ndpFrame
		kind string // "" when not answered
	}{
		{"NUD probe to the VIP", parse(nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)), "unicast"},
		{"address resolution to the solicited-node group", parse(nsBytes(t, clientMAC, mcastMAC, client6, snm, vip6, 255)), "multicast"},
		{"DAD from the unspecified address", parse(nsBytes(t, clientMAC, mcastMAC, netip.IPv6Unspecified(), snm, vip6, 255)), "multicast"},
		{"not owned, unicast", parse(nsBytes(t, clientMAC, ourMAC, client6, other, other, 255)), ""},
		{"not owned, multicast", parse(nsBytes(t, clientMAC, mcastMAC, client6, snm, other, 255)), ""},
		{"to a group beyond the link", parse(nsBytes(t, clientMAC, mcastMAC, client6, global, vip6, 255)), ""},
		{"sent to another address", parse(nsBytes(t, clientMAC, ourMAC, client6, client6, vip6, 255)), ""},
		{"from our MAC", parse(nsBytes(t, ourMAC, ourMAC, client6, vip6, vip6, 255)), ""},
		{"from our MAC, multicast", parse(nsBytes(t, ourMAC, mcastMAC, client6, snm, vip6, 255)), ""},
		{"empty", ndpFrame{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, ok := nsFor(tc.f, ourMAC, owns)
			if ok != (tc.kind != "") || kind != tc.kind || (ok && got != vip6) {
				t.Errorf("got %v %q %v, want %q", got, kind, ok, tc.kind)
			}
		})
	}
}

// TestNDPFilter runs the BPF program in the x/net/bpf VM. The VM has no
// packet type, so its load is replaced by a constant: each packet type in
// turn.
func TestNDPFilter(t *testing.T) {
	raw, err := ndpFilter()
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
	ns := nsBytes(t, clientMAC, ourMAC, client6, vip6, vip6, 255)
	na := append([]byte{}, ns...)
	na[offICMP] = 136
	ra := append([]byte{}, ns...)
	ra[offICMP] = 134
	arpFrame := append([]byte{}, ns...)
	arpFrame[12], arpFrame[13] = 0x08, 0x06
	const packetOutgoing, packetLoopback, packetOtherHost = 4, 5, 3
	for _, pt := range []uint32{packetHostType, packetMcastType, packetOtherHost, packetOutgoing, packetLoopback} {
		prog[0] = bpf.LoadConstant{Dst: bpf.RegA, Val: pt}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		forUs := pt == packetHostType || pt == packetMcastType
		for name, tc := range map[string]struct {
			frame []byte
			pass  bool
		}{"NS": {ns, forUs}, "NA": {na, forUs}, "router advertisement": {ra, false}, "ARP": {arpFrame, false}, "short": {ns[:20], false}} {
			n, err := vm.Run(tc.frame)
			if (n > 0) != tc.pass {
				t.Errorf("packet type %d, %s: accepted %d bytes (err %v), want pass=%v", pt, name, n, err, tc.pass)
			}
		}
	}
}
