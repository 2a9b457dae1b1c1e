package layer2

import (
	"net"
	"net/netip"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
)

// TestFenceWinsIsOneSided: for any two MACs and a VIP exactly one side
// wins, whoever computes it, and the winner varies with the VIP (the load
// of a split brain is spread, not all given to one node).
func TestFenceWinsIsOneSided(t *testing.T) {
	macs := []net.HardwareAddr{ourMAC, otherMAC, clientMAC, {0x02, 0, 0, 0, 0, 0x13}}
	wins := map[string]int{}
	for i := range 256 {
		vip := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		for _, a := range macs {
			for _, b := range macs {
				if a.String() == b.String() {
					continue
				}
				if fenceWins(vip, a, b) == fenceWins(vip, b, a) {
					t.Fatalf("%s: %s vs %s: both or neither win", vip, a, b)
				}
			}
		}
		if fenceWins(vip, ourMAC, otherMAC) {
			wins[ourMAC.String()]++
		} else {
			wins[otherMAC.String()]++
		}
	}
	if wins[ourMAC.String()] < 64 || wins[otherMAC.String()] < 64 {
		t.Errorf("winners over 256 VIPs: %v", wins)
	}
}

// TestARPAnswerFor: only another host's reply sent to this node's MAC is
// an answer to the fence's probe.
func TestARPAnswerFor(t *testing.T) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		name string
		pkt  *arp.Packet
		dst  net.HardwareAddr
		want bool
	}{
		{"reply to our probe", arpPacket(t, arp.OperationReply, otherMAC, vip4, ourMAC, netip.IPv4Unspecified()), ourMAC, true},
		{"reply to our address", arpPacket(t, arp.OperationReply, otherMAC, vip4, ourMAC, client4), ourMAC, true},
		{"reply to another host", arpPacket(t, arp.OperationReply, otherMAC, vip4, clientMAC, client4), clientMAC, false},
		{"gratuitous (handled as an announcement)", arpPacket(t, arp.OperationReply, otherMAC, vip4, ethernet.Broadcast, vip4), ethernet.Broadcast, false},
		{"our own reply", arpPacket(t, arp.OperationReply, ourMAC, vip4, ourMAC, client4), ourMAC, false},
		{"a request", arpPacket(t, arp.OperationRequest, otherMAC, client4, zero, vip4), ourMAC, false},
		{"nil", nil, ourMAC, false},
	} {
		vip, ok := arpAnswerFor(tc.pkt, tc.dst, ourMAC)
		if ok != tc.want || ok && vip != vip4 {
			t.Errorf("%s: got %v %v, want %v", tc.name, vip, ok, tc.want)
		}
	}
}

// TestNAAnswer: a solicited advertisement counts unless it carries our
// own MAC; unsolicited ones are announcements, not answers.
func TestNAAnswer(t *testing.T) {
	lla := func(mac net.HardwareAddr) []ndp.Option {
		return []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}}
	}
	for _, tc := range []struct {
		name string
		na   *ndp.NeighborAdvertisement
		want bool
	}{
		{"solicited, other MAC", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6, Options: lla(otherMAC)}, true},
		{"solicited, no option", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6}, true},
		{"solicited, our MAC", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6, Options: lla(ourMAC)}, false},
		{"unsolicited", &ndp.NeighborAdvertisement{Override: true, TargetAddress: vip6, Options: lla(otherMAC)}, false},
		{"multicast target", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: netip.MustParseAddr("ff02::1")}, false},
		{"nil", nil, false},
	} {
		vip, ok := naAnswer(tc.na, ourMAC)
		if ok != tc.want || ok && vip != vip6 {
			t.Errorf("%s: got %v %v, want %v", tc.name, vip, ok, tc.want)
		}
	}
}
