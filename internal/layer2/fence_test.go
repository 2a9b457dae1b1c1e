package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

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
				if FenceWins(vip, a, b) == FenceWins(vip, b, a) {
					t.Fatalf("%s: %s vs %s: both or neither win", vip, a, b)
				}
			}
		}
		if FenceWins(vip, ourMAC, otherMAC) {
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
		vip, by, ok := arpAnswerFor(tc.pkt, tc.dst, ourMAC)
		if ok != tc.want || ok && (vip != vip4 || !bytes.Equal(by, otherMAC)) {
			t.Errorf("%s: got %v %v %v, want %v", tc.name, vip, by, ok, tc.want)
		}
	}
}

// TestNAAnswer: a solicited advertisement counts unless it carries our
// own MAC, and names the answering host by its target link-layer address
// or, without one, the frame's source; unsolicited ones are
// announcements, not answers.
func TestNAAnswer(t *testing.T) {
	lla := func(mac net.HardwareAddr) []ndp.Option {
		return []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}}
	}
	for _, tc := range []struct {
		name   string
		na     *ndp.NeighborAdvertisement
		src    net.HardwareAddr
		want   bool
		wantBy net.HardwareAddr
	}{
		{"solicited, other MAC", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6, Options: lla(otherMAC)}, clientMAC, true, otherMAC},
		{"solicited, no option", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6}, otherMAC, true, otherMAC},
		{"solicited, no option, source unknown", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6}, nil, true, nil},
		{"solicited, our MAC", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6, Options: lla(ourMAC)}, otherMAC, false, nil},
		{"solicited, no option, from us", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: vip6}, ourMAC, false, nil},
		{"unsolicited", &ndp.NeighborAdvertisement{Override: true, TargetAddress: vip6, Options: lla(otherMAC)}, otherMAC, false, nil},
		{"multicast target", &ndp.NeighborAdvertisement{Solicited: true, TargetAddress: netip.MustParseAddr("ff02::1")}, otherMAC, false, nil},
		{"nil", nil, otherMAC, false, nil},
	} {
		vip, by, ok := naAnswer(tc.na, tc.src, ourMAC)
		if ok != tc.want || ok && (vip != vip6 || !bytes.Equal(by, tc.wantBy)) {
			t.Errorf("%s: got %v %v %v, want %v %v", tc.name, vip, by, ok, tc.want, tc.wantBy)
		}
	}
}

// TestFenceTakesNoAnnouncerLock: a responder's read loop runs the fence
// (the winner reasserts, the loser tells the winner) while SetAnnouncements
// may hold the announcer's lock and be closing that very responder, which
// waits for its read loop to end. So the fence must never take that lock:
// in CI a speaker deadlocked there for good (no announcement, no status)
// when its Node was deleted and its addresses withdrawn.
func TestFenceTakesNoAnnouncerLock(t *testing.T) {
	a, _, _ := testAnnouncer(t, Config{FenceSettle: time.Nanosecond})
	a.publish(node(true).snapshot())
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x11} // eth0's in node()
	var winner, loser net.HardwareAddr              // another host that wins, one that loses
	for i := 1; i < 1<<16 && (winner == nil || loser == nil); i++ {
		by := net.HardwareAddr{0x02, byte(i >> 8), byte(i), byte(i * 31), byte(i * 17), byte(i * 7)}
		if FenceWins(vip4, mac, by) {
			loser = by
		} else {
			winner = by
		}
	}
	if winner == nil || loser == nil {
		t.Fatalf("no MAC wins (%v) or loses (%v) against %s for %s", winner, loser, mac, vip4)
	}
	a.mu.Lock() // as SetAnnouncements does while it closes responders
	defer a.mu.Unlock()
	for _, by := range []net.HardwareAddr{loser, winner} {
		done := make(chan struct{})
		go func() {
			a.foreignAnnouncement("eth0", "arp", vip4, mac, by)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the fence against %s blocks on the announcer's lock", by)
		}
	}
}
