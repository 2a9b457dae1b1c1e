package layer2

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

// decodeARP parses a frame with the responder's own parser; the fuzzers
// of single decisions skip what does not parse (FuzzARPReadPath checks
// that path).
func decodeARP(b []byte) (*arp.Packet, *ethernet.Frame, bool) {
	p, fr, err := parseARPFrame(b)
	return p, fr, err == nil
}

// FuzzParseNDPFrame feeds arbitrary frames to the packet-socket path: the
// parser and the decisions must never panic; whatever they accept must be a
// validated solicitation or advertisement; a solicitation answered must be
// one for an owned VIP, not from our MAC, sent to the VIP itself (unicast)
// or to a link-local group (multicast); an advertisement taken as a
// takeover must be another host's unsolicited one for the VIP.
func FuzzParseNDPFrame(f *testing.F) {
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, vip6, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, snm, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, netip.IPv6Unspecified(), vip6, vip6, 255))
	f.Add(nsBytes(f, ourMAC, ourMAC, client6, vip6, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, vip6, vip6, 64))
	f.Add(unsolicitedNABytes(f, otherMAC, vip6))
	f.Add(unsolicitedNABytes(f, ourMAC, vip6))
	f.Add([]byte{})
	f.Add(make([]byte, offICMP+nsMinLen))
	f.Add(ndpBytes(f, otherMAC, ourMAC, netip.IPv6Unspecified(), snm, &ndp.NeighborSolicitation{TargetAddress: vip6}, 255))
	owns := ownsOnly(vip6)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := parseNDPFrame(b)
		if err != nil {
			return
		}
		if (fr.ns == nil) == (fr.na == nil) || len(fr.srcMAC) != 6 {
			t.Fatalf("accepted malformed frame: %+v", fr)
		}
		plen := int(binary.BigEndian.Uint16(b[ethHeaderLen+4:]))
		if b[offHopLimit] != 255 || icmpv6Checksum(fr.src, fr.dst, b[offICMP:offICMP+plen]) != 0xffff {
			t.Fatalf("accepted a frame that fails validation: %x", b)
		}
		if fr.na != nil {
			vip, by, ok := naTakeover(fr.na, fr.srcMAC, ourMAC, owns)
			if ok && (vip != vip6 || fr.na.Solicited || !fr.na.Override || bytes.Equal(fr.srcMAC, ourMAC) || bytes.Equal(by, ourMAC)) {
				t.Fatalf("takeover of %v by %v from %+v", vip, by, fr)
			}
			return
		}
		if !fr.ns.TargetAddress.Is6() {
			t.Fatalf("accepted malformed solicitation: %+v", fr)
		}
		if vip, ok := nsGaveUp(fr, ourMAC); ok && (!vip.Is6() || !fr.src.IsUnspecified() || !fr.toUs(ourMAC) || bytes.Equal(fr.srcMAC, ourMAC)) {
			t.Fatalf("read as giving up %v: %+v", vip, fr)
		}
		vip, kind, ok := nsFor(fr, ourMAC, owns)
		if ok && (vip != vip6 || bytes.Equal(fr.srcMAC, ourMAC) ||
			(kind == "unicast") != (fr.dst == vip6) || (kind == "multicast") != fr.dst.IsLinkLocalMulticast()) {
			t.Fatalf("answered %v (%s) for %+v", vip, kind, fr)
		}
	})
}

// FuzzARPRequestFor feeds arbitrary frames through mdlayher's parsers (as
// arp.Client.Read does) and the "is this request for us" decision.
func FuzzARPRequestFor(f *testing.F) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	for _, p := range []*arp.Packet{
		arpPacket(f, arp.OperationRequest, clientMAC, client4, zero, vip4),
		arpPacket(f, arp.OperationRequest, ourMAC, client4, zero, vip4),
		arpPacket(f, arp.OperationReply, clientMAC, client4, ourMAC, vip4),
		arpPacket(f, arp.OperationRequest, otherMAC, vip4, ethernet.Broadcast, vip4),
		arpPacket(f, arp.OperationRequest, otherMAC, netip.IPv4Unspecified(), ourMAC, vip4),
	} {
		for _, dst := range []net.HardwareAddr{ethernet.Broadcast, ourMAC, otherMAC} {
			f.Add(arpFrame(f, p, dst))
		}
	}
	f.Add([]byte{})
	owns := ownsOnly(vip4)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, fr, ok := decodeARP(b)
		if !ok {
			return
		}
		if vip, by, ok := arpGaveUp(p, fr.Destination, ourMAC); ok &&
			(!vip.Is4() || p.SenderIP != netip.IPv4Unspecified() || !bytes.Equal(fr.Destination, ourMAC) || !isOtherHost(by, ourMAC)) {
			t.Fatalf("read as giving up %v by %v: %+v in %+v", vip, by, p, fr)
		}
		vip, ok := arpRequestFor(p, fr.Destination, ourMAC, owns)
		if !ok {
			return
		}
		switch {
		case vip != vip4, p.Operation != arp.OperationRequest, bytes.Equal(p.SenderHardwareAddr, ourMAC),
			!bytes.Equal(fr.Destination, ethernet.Broadcast) && !bytes.Equal(fr.Destination, ourMAC):
			t.Fatalf("answered %v for %+v in %+v", vip, p, fr)
		}
	})
}

func arpFrame(t testing.TB, p *arp.Packet, dst net.HardwareAddr) []byte {
	t.Helper()
	pb, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	fr := &ethernet.Frame{Destination: dst, Source: p.SenderHardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}
	b, err := fr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
