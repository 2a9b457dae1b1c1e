package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

func TestARPTakeover(t *testing.T) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	releasing := ownsOnly(vip4)
	other4 := netip.MustParseAddr("198.51.100.71")
	tests := []struct {
		name   string
		pkt    *arp.Packet
		ethSrc net.HardwareAddr
		want   bool
	}{
		{"gratuitous reply", arpPacket(t, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4), otherMAC, true},
		{"gratuitous request (RFC 5227 announcement)", arpPacket(t, arp.OperationRequest, otherMAC, vip4, zero, vip4), otherMAC, true},
		{"ethernet source differs from the sender MAC", arpPacket(t, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4), clientMAC, true},
		{"our own gratuitous ARP", arpPacket(t, arp.OperationReply, ourMAC, vip4, ethernet.Broadcast, vip4), ourMAC, false},
		{"sent from our MAC on behalf of another", arpPacket(t, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4), ourMAC, false},
		{"VIP not being released", arpPacket(t, arp.OperationReply, otherMAC, other4, ethernet.Broadcast, other4), otherMAC, false},
		{"ordinary reply from the VIP", arpPacket(t, arp.OperationReply, otherMAC, vip4, clientMAC, client4), otherMAC, false},
		{"request for the VIP", arpPacket(t, arp.OperationRequest, clientMAC, client4, zero, vip4), clientMAC, false},
		{"probe from 0.0.0.0 (RFC 5227)", arpPacket(t, arp.OperationRequest, otherMAC, netip.IPv4Unspecified(), zero, vip4), otherMAC, false},
		{"zero sender MAC", arpPacket(t, arp.OperationReply, zero, vip4, ethernet.Broadcast, vip4), otherMAC, false},
		{"broadcast sender MAC", arpPacket(t, arp.OperationReply, ethernet.Broadcast, vip4, ethernet.Broadcast, vip4), otherMAC, false},
		{"multicast sender MAC", arpPacket(t, arp.OperationReply, net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}, vip4, ethernet.Broadcast, vip4), otherMAC, false},
		{"unknown operation", &arp.Packet{Operation: 3, SenderHardwareAddr: otherMAC, SenderIP: vip4, TargetHardwareAddr: zero, TargetIP: vip4}, otherMAC, false},
		{"nil", nil, otherMAC, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vip, by, ok := arpTakeover(tc.pkt, tc.ethSrc, ourMAC, releasing)
			if ok != tc.want || ok && (vip != vip4 || !bytes.Equal(by, otherMAC)) {
				t.Errorf("got %v %v %v, want %v", vip, by, ok, tc.want)
			}
		})
	}
}

func unsolicitedNA(target netip.Addr, solicited, override bool, opts ...ndp.Option) *ndp.NeighborAdvertisement {
	return &ndp.NeighborAdvertisement{Solicited: solicited, Override: override, TargetAddress: target, Options: opts}
}

func tll(mac net.HardwareAddr) ndp.Option {
	return &ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}
}

func TestNATakeover(t *testing.T) {
	releasing := ownsOnly(vip6)
	other6 := netip.MustParseAddr("2001:db8:1::71")
	sll := &ndp.LinkLayerAddress{Direction: ndp.Source, Addr: clientMAC}
	tests := []struct {
		name   string
		na     *ndp.NeighborAdvertisement
		srcMAC net.HardwareAddr
		want   net.HardwareAddr // nil: not a takeover
	}{
		{"unsolicited NA with override", unsolicitedNA(vip6, false, true, tll(otherMAC)), nil, otherMAC},
		{"the TLL wins over the frame source", unsolicitedNA(vip6, false, true, tll(otherMAC)), clientMAC, otherMAC},
		{"no TLL: frame source", unsolicitedNA(vip6, false, true), otherMAC, otherMAC},
		{"only a source link-layer option: frame source", unsolicitedNA(vip6, false, true, sll), otherMAC, otherMAC},
		{"no TLL, source unknown", unsolicitedNA(vip6, false, true), nil, nil},
		{"first TLL counts", unsolicitedNA(vip6, false, true, tll(otherMAC), tll(ourMAC)), nil, otherMAC},
		{"solicited", unsolicitedNA(vip6, true, true, tll(otherMAC)), nil, nil},
		{"no override", unsolicitedNA(vip6, false, false, tll(otherMAC)), nil, nil},
		{"our own NA", unsolicitedNA(vip6, false, true, tll(ourMAC)), nil, nil},
		{"sent from our MAC", unsolicitedNA(vip6, false, true, tll(otherMAC)), ourMAC, nil},
		{"VIP not being released", unsolicitedNA(other6, false, true, tll(otherMAC)), nil, nil},
		{"multicast TLL", unsolicitedNA(vip6, false, true, tll(net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1})), nil, nil},
		{"short TLL", unsolicitedNA(vip6, false, true, tll(net.HardwareAddr{2, 0, 0, 0})), nil, nil},
		{"multicast target", unsolicitedNA(netip.IPv6LinkLocalAllNodes(), false, true, tll(otherMAC)), nil, nil},
		{"unspecified target", unsolicitedNA(netip.IPv6Unspecified(), false, true, tll(otherMAC)), nil, nil},
		{"IPv4-mapped target", unsolicitedNA(netip.AddrFrom16(vip4.As16()), false, true, tll(otherMAC)), nil, nil},
		{"nil", nil, otherMAC, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vip, by, ok := naTakeover(tc.na, tc.srcMAC, ourMAC, func(a netip.Addr) bool { return releasing(a) || a.IsMulticast() || a.IsUnspecified() || a.Is4In6() })
			if ok != (tc.want != nil) || ok && (vip != vip6 || !bytes.Equal(by, tc.want)) {
				t.Errorf("got %v %v %v, want %v", vip, by, ok, tc.want)
			}
		})
	}
}

func TestNATakeoverZone(t *testing.T) {
	vip, _, ok := naTakeover(unsolicitedNA(vip6.WithZone("eth0"), false, true, tll(otherMAC)), nil, ourMAC, ownsOnly(vip6))
	if !ok || vip != vip6 {
		t.Fatalf("got %v %v, want %v without zone", vip, ok, vip6)
	}
}

// FuzzARPTakeover feeds arbitrary frames through mdlayher's parsers (as
// arp.Client.Read does) and the "another host's gratuitous ARP for a VIP
// being released" decision.
func FuzzARPTakeover(f *testing.F) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	for _, p := range []*arp.Packet{
		arpPacket(f, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4),
		arpPacket(f, arp.OperationRequest, otherMAC, vip4, zero, vip4),
		arpPacket(f, arp.OperationReply, ourMAC, vip4, ethernet.Broadcast, vip4),
		arpPacket(f, arp.OperationRequest, clientMAC, client4, zero, vip4),
	} {
		f.Add(arpFrame(f, p, ethernet.Broadcast))
	}
	f.Add([]byte{})
	releasing := ownsOnly(vip4)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, fr, ok := decodeARP(b)
		if !ok {
			return
		}
		vip, by, ok := arpTakeover(p, fr.Source, ourMAC, releasing)
		if !ok {
			return
		}
		switch {
		case vip != vip4, p.SenderIP != vip4, p.TargetIP != vip4,
			p.Operation != arp.OperationRequest && p.Operation != arp.OperationReply,
			!bytes.Equal(by, p.SenderHardwareAddr), !isOtherHost(by, ourMAC), bytes.Equal(fr.Source, ourMAC):
			t.Fatalf("takeover of %v by %v from %+v in %+v", vip, by, p, fr)
		}
	})
}

// FuzzNATakeover feeds arbitrary ICMPv6 messages (what the ICMPv6 socket
// hands over) through ndp.ParseMessage and the "another host's unsolicited
// NA for a VIP being released" decision. The first byte picks the frame's
// source MAC: none, ours or another host's.
func FuzzNATakeover(f *testing.F) {
	for _, na := range []*ndp.NeighborAdvertisement{
		unsolicitedNA(vip6, false, true, tll(otherMAC)),
		unsolicitedNA(vip6, false, true, tll(ourMAC)),
		unsolicitedNA(vip6, true, true, tll(otherMAC)),
		unsolicitedNA(vip6, false, true),
	} {
		b, err := ndp.MarshalMessage(na)
		if err != nil {
			f.Fatal(err)
		}
		for src := range byte(3) {
			f.Add(append([]byte{src}, b...))
		}
	}
	f.Add([]byte{0})
	releasing := ownsOnly(vip6)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		srcMAC := [][]byte{nil, ourMAC, otherMAC}[int(b[0])%3]
		m, err := ndp.ParseMessage(b[1:])
		if err != nil {
			return
		}
		na, isNA := m.(*ndp.NeighborAdvertisement)
		if !isNA {
			return
		}
		vip, by, ok := naTakeover(na, srcMAC, ourMAC, releasing)
		if !ok {
			return
		}
		if vip != vip6 || na.Solicited || !na.Override || !isOtherHost(by, ourMAC) || bytes.Equal(srcMAC, ourMAC) {
			t.Fatalf("takeover of %v by %v from %+v (source %v)", vip, by, na, net.HardwareAddr(srcMAC))
		}
	})
}
