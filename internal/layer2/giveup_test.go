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
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestARPGaveUp(t *testing.T) {
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	probe := func(sha net.HardwareAddr, spa, tpa netip.Addr) *arp.Packet {
		return arpPacket(t, arp.OperationRequest, sha, spa, ourMAC, tpa)
	}
	tests := []struct {
		name string
		pkt  *arp.Packet
		dst  net.HardwareAddr
		want bool
	}{
		{"probe to our MAC alone", probe(otherMAC, netip.IPv4Unspecified(), vip4), ourMAC, true},
		{"probe with a zero target MAC, to our MAC", arpPacket(t, arp.OperationRequest, otherMAC, netip.IPv4Unspecified(), zero, vip4), ourMAC, true},
		{"broadcast probe (RFC 5227, a host about to use the address)", probe(otherMAC, netip.IPv4Unspecified(), vip4), ethernet.Broadcast, false},
		{"probe to another MAC", probe(otherMAC, netip.IPv4Unspecified(), vip4), clientMAC, false},
		{"unicast request from an address (the kernel's revalidation)", probe(clientMAC, client4, vip4), ourMAC, false},
		{"gratuitous request", probe(otherMAC, vip4, vip4), ourMAC, false},
		{"reply", arpPacket(t, arp.OperationReply, otherMAC, netip.IPv4Unspecified(), ourMAC, vip4), ourMAC, false},
		{"our own probe", probe(ourMAC, netip.IPv4Unspecified(), vip4), ourMAC, false},
		{"zero sender MAC", probe(zero, netip.IPv4Unspecified(), vip4), ourMAC, false},
		{"for 0.0.0.0", probe(otherMAC, netip.IPv4Unspecified(), netip.IPv4Unspecified()), ourMAC, false},
		{"for a multicast address", probe(otherMAC, netip.IPv4Unspecified(), netip.MustParseAddr("224.0.0.1")), ourMAC, false},
		{"nil", nil, ourMAC, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vip, by, ok := arpGaveUp(tc.pkt, tc.dst, ourMAC)
			if ok != tc.want || ok && (vip != vip4 || !bytes.Equal(by, otherMAC)) {
				t.Errorf("got %v %v %v, want %v", vip, by, ok, tc.want)
			}
		})
	}
	// What giveUp sends is read as that, and as nothing else: not an
	// announcement to yield to, not a request to answer.
	pkt := probe(otherMAC, netip.IPv4Unspecified(), vip4)
	if _, _, ok := arpTakeover(pkt, otherMAC, ourMAC, ownsOnly(vip4)); ok {
		t.Error("a give-up probe read as a takeover")
	}
	if _, _, ok := arpAnswerFor(pkt, ourMAC, ourMAC); ok {
		t.Error("a give-up probe read as an answer")
	}
}

func TestNSGaveUp(t *testing.T) {
	parse := func(b []byte) ndpFrame {
		f, err := parseNDPFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	snm, _ := ndp.SolicitedNodeMulticast(vip6)
	mcastMAC := net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x70}
	unspec := netip.IPv6Unspecified()
	ns := func(target netip.Addr) ndp.Message { return &ndp.NeighborSolicitation{TargetAddress: target} }
	tests := []struct {
		name string
		f    ndpFrame
		want bool
	}{
		{"solicitation from :: to our MAC alone", parse(ndpBytes(t, otherMAC, ourMAC, unspec, snm, ns(vip6), 255)), true},
		{"DAD to the group's MAC (a host about to use the address)", parse(ndpBytes(t, otherMAC, mcastMAC, unspec, snm, ns(vip6), 255)), false},
		{"from an address, to our MAC (neighbour unreachability detection)", parse(ndpBytes(t, clientMAC, ourMAC, client6, vip6, ns(vip6), 255)), false},
		{"from our MAC", parse(ndpBytes(t, ourMAC, ourMAC, unspec, snm, ns(vip6), 255)), false},
		{"for a link-local address", parse(ndpBytes(t, otherMAC, ourMAC, unspec, snm, ns(netip.MustParseAddr("fe80::70")), 255)), false},
		{"an advertisement", parse(ndpBytes(t, otherMAC, ourMAC, unspec, netip.IPv6LinkLocalAllNodes(), unsolicitedNA(vip6, false, true, tll(otherMAC)), 255)), false},
		{"empty", ndpFrame{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vip, ok := nsGaveUp(tc.f, ourMAC)
			if ok != tc.want || ok && vip != vip6 {
				t.Errorf("got %v %v, want %v", vip, ok, tc.want)
			}
		})
	}
}

// fenceVIP returns a lab VIP (on eth0's subnet) for which this node
// (ourMAC) wins the fence against otherMAC, or loses it.
func fenceVIP(t *testing.T, weWin bool) netip.Addr {
	t.Helper()
	for i := 70; i < 120; i++ {
		vip := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		if FenceWins(vip, ourMAC, otherMAC) == weWin {
			return vip
		}
	}
	t.Fatalf("no VIP where this node wins=%v", weWin)
	return netip.Addr{}
}

// TestFenceWinnerReleasingWaitsForTheLoser: a node that won the fence for
// a VIP and then hands it over does not yield to the loser's announcement
// from before the fence (the loser has been silent since), and keeps
// answering until the loser, told, announces the VIP again.
func TestFenceWinnerReleasingWaitsForTheLoser(t *testing.T) {
	vip := fenceVIP(t, true)
	a, f, yields, _, _ := releaseAnnouncer(t)
	a.SetAnnouncements([]Announcement{{IP: vip}})
	f.take()
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
	if got := a.owned.Load().state("eth0", vip).beatenHost(); !bytes.Equal(got, otherMAC) {
		t.Fatalf("beaten host %v, want %v", got, otherMAC)
	}
	a.SetAnnouncements([]Announcement{{IP: vip, Releasing: true}})
	if !a.owned.Load().releasing("eth0", vip) {
		t.Fatal("yielded at once to the beaten host's announcement from before the fence")
	}
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
	expectYield(t, yields, vip)
	if a.owns("eth0", vip) {
		t.Fatal("still answered after the loser announced the VIP again")
	}
}

// TestGaveUpLiftsTheFence: a node fenced for a VIP answers again when the
// winner says it gave the VIP up, and only the winner can say so.
func TestGaveUpLiftsTheFence(t *testing.T) {
	vip, winner := fenceVIP(t, false), otherMAC
	a, f, _, _, _ := releaseAnnouncer(t)
	a.cfg.FenceSettle = time.Nanosecond
	a.SetAnnouncements([]Announcement{{IP: vip}})
	f.take()
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, winner)
	s := a.owned.Load().state("eth0", vip)
	if !s.fenced(time.Now()) {
		t.Fatal("not fenced after losing")
	}
	third := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x13}
	a.gaveUp("eth0", protoARP, vip, third)
	if !s.fenced(time.Now()) {
		t.Fatal("another host than the winner lifted the fence")
	}
	a.gaveUp("eth0", protoARP, vip, winner)
	if s.fenced(time.Now()) {
		t.Fatal("still fenced after the winner gave the VIP up")
	}
	if v := testutil.ToFloat64(a.metrics.fenceLifted.WithLabelValues("eth0", protoARP)); v != 1 {
		t.Errorf("herald_l2_fence_lifted_total = %g, want 1", v)
	}
	// A lifted claim is new: the winner's last announcement does not fence
	// it again at once.
	a.cfg.FenceSettle = time.Hour
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, winner)
	if s.fenced(time.Now()) {
		t.Fatal("fenced again by the winner's announcement right after it gave the VIP up")
	}
}
