package announce

import (
	"fmt"
	"net/netip"
	"testing"
)

var allNodes = []string{"node1", "node2", "node3", "node4", "node5"}

func testIPs(n int) []netip.Addr {
	out := make([]netip.Addr, 0, n)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			out = append(out, netip.AddrFrom4([4]byte{198, 51, 100, byte(i / 2)}))
		} else {
			out = append(out, netip.MustParseAddr(fmt.Sprintf("2001:db8:ff::%x", i)))
		}
	}
	return out
}

// subsets returns every non-empty subset of nodes.
func subsets(nodes []string) [][]string {
	var out [][]string
	for mask := 1; mask < 1<<len(nodes); mask++ {
		var s []string
		for i, n := range nodes {
			if mask&(1<<i) != 0 {
				s = append(s, n)
			}
		}
		out = append(out, s)
	}
	return out
}

// TestOwnerMovesOnlyWhatTheChangedNodeHeld checks, for every subset of five
// nodes and every single-node removal from it, that only the addresses the
// removed node owned change owner (and that adding it back restores them).
func TestOwnerMovesOnlyWhatTheChangedNodeHeld(t *testing.T) {
	ips := testIPs(256)
	for _, set := range subsets(allNodes) {
		before := map[netip.Addr]string{}
		for _, ip := range ips {
			before[ip] = Owner(ip, set)
		}
		for i, gone := range set {
			rest := append(append([]string(nil), set[:i]...), set[i+1:]...)
			for _, ip := range ips {
				after := Owner(ip, rest)
				if before[ip] != gone && after != before[ip] {
					t.Fatalf("removing %s from %v moved %s from %s to %s", gone, set, ip, before[ip], after)
				}
				if len(rest) > 0 && after == gone {
					t.Fatalf("a removed node owns %s", ip)
				}
			}
		}
	}
}

func TestOwnerIsDeterministicAndOrderFree(t *testing.T) {
	ips := testIPs(64)
	reversed := []string{"node5", "node4", "node3", "node2", "node1"}
	for _, ip := range ips {
		if Owner(ip, allNodes) != Owner(ip, reversed) {
			t.Fatalf("owner of %s depends on candidate order", ip)
		}
	}
	if Owner(ips[0], nil) != "" {
		t.Error("owner without candidates")
	}
}

func TestOwnerSpreadsAddresses(t *testing.T) {
	count := map[string]int{}
	for _, ip := range testIPs(5000) {
		count[Owner(ip, allNodes)]++
	}
	for _, n := range allNodes {
		if count[n] < 800 || count[n] > 1200 {
			t.Errorf("%s owns %d of 5000 addresses (expected about 1000): %v", n, count[n], count)
		}
	}
}
