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

// FuzzParseNSFrame feeds arbitrary frames to the packet-socket path: the
// parser and the decision must never panic, and whatever they accept must be
// a well-formed solicitation for an owned VIP sent to the VIP itself.
func FuzzParseNSFrame(f *testing.F) {
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, vip6, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, snm, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, netip.IPv6Unspecified(), vip6, vip6, 255))
	f.Add(nsBytes(f, ourMAC, ourMAC, client6, vip6, vip6, 255))
	f.Add(nsBytes(f, clientMAC, ourMAC, client6, vip6, vip6, 64))
	f.Add([]byte{})
	f.Add(make([]byte, offICMP+nsMinLen))
	owns := ownsOnly(vip6)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := parseNSFrame(b)
		if err != nil {
			return
		}
		if !fr.ns.TargetAddress.Is6() || len(fr.srcMAC) != 6 {
			t.Fatalf("accepted malformed frame: %+v", fr)
		}
		plen := int(binary.BigEndian.Uint16(b[ethHeaderLen+4:]))
		if b[offHopLimit] != 255 || icmpv6Checksum(fr.src, fr.dst, b[offICMP:offICMP+plen]) != 0xffff {
			t.Fatalf("accepted a frame that fails validation: %x", b)
		}
		vip, ok := unicastNSFor(fr, ourMAC, owns)
		if ok && (vip != vip6 || fr.dst != vip6 || bytes.Equal(fr.srcMAC, ourMAC)) {
			t.Fatalf("answered %v for %+v", vip, fr)
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
