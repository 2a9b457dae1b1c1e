package layer2

import (
	"net"
	"net/netip"
	"testing"
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
