package allocator

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/internal/iprange"
)

// TestRunSetAgainstBruteForce adds and removes random addresses around two
// .255/.0 boundaries and compares every answer with a walk over a map.
func TestRunSetAgainstBruteForce(t *testing.T) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, seed))
	space := iprange.Range{First: netip.MustParseAddr("198.51.100.240"), Last: netip.MustParseAddr("198.51.102.16")}
	var all []netip.Addr
	for z := space.First; space.Contains(z); z = z.Next() {
		all = append(all, z)
	}
	held := map[netip.Addr]bool{}
	isHeld := func(a netip.Addr) bool { return held[a] }
	plain, bridged := newRunSet(false), newRunSet(true)
	for step := range 20000 {
		a := all[r.IntN(len(all))]
		if held[a] {
			delete(held, a)
			plain.remove(a, isHeld)
			bridged.remove(a, isHeld)
		} else {
			held[a] = true
			plain.add(a)
			bridged.add(a)
		}
		i, j := r.IntN(len(all)), r.IntN(len(all))
		rg := iprange.Range{First: all[min(i, j)], Last: all[max(i, j)]}
		for _, avoid := range []bool{false, true} {
			set := plain
			if avoid {
				set = bridged
			}
			got, gotOK := set.lowestFree(rg, avoid)
			want, wantOK := bruteLowestFree(rg, held, avoid)
			if got != want || gotOK != wantOK {
				t.Fatalf("seed %d step %d: lowestFree(%v, avoid=%v) = %v %v, want %v %v", seed, step, rg, avoid, got, gotOK, want, wantOK)
			}
		}
	}
}

func bruteLowestFree(rg iprange.Range, held map[netip.Addr]bool, avoid bool) (netip.Addr, bool) {
	for z := rg.First; rg.Contains(z); z = z.Next() {
		if !held[z] && !(avoid && isBuggy(z)) {
			return z, true
		}
	}
	return netip.Addr{}, false
}

func TestRunSetEdges(t *testing.T) {
	held := map[netip.Addr]bool{}
	isHeld := func(a netip.Addr) bool { return held[a] }
	s := newRunSet(false)
	top := netip.MustParseAddr("255.255.255.255")
	held[top] = true
	s.add(top)
	if _, ok := s.lowestFree(iprange.Range{First: top, Last: top}, false); ok {
		t.Error("the last IPv4 address is held, yet free")
	}
	v6top := netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
	held[v6top] = true
	s.add(v6top)
	if s.tree.Len() != 2 {
		t.Errorf("families joined into one run: %d runs", s.tree.Len())
	}
	delete(held, top)
	s.remove(top, isHeld)
	if got, ok := s.lowestFree(iprange.Range{First: top, Last: top}, false); !ok || got != top {
		t.Error("released address not free")
	}
}

// With avoidBuggyIPs, a dense pool stays one bridged run, so "lowest free"
// never walks run after run.
func TestBridgedRunsStayWhole(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/22", avoidBuggy()))
	for i := range 900 {
		mustAssign(t, a, svc(fmt.Sprintf("ns/s%d", i)))
	}
	if n := a.book.taken.avoid4.tree.Len(); n != 1 {
		t.Errorf("%d bridged runs, want 1", n)
	}
	if n := a.book.taken.all.tree.Len(); n != 4 {
		t.Errorf("%d plain runs, want 4 (split at each .255/.0)", n)
	}
	a.Release("ns/s300")
	checkBook(t, a)
	if n := a.book.taken.avoid4.tree.Len(); n != 2 {
		t.Errorf("%d bridged runs after one release, want 2", n)
	}
}
