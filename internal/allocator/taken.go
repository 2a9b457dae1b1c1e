package allocator

import (
	"net/netip"

	"github.com/herald-lb/herald/internal/iprange"
)

// taken is the set of held addresses, whatever pool they came from, kept
// twice: as plain runs of both families, and as IPv4 runs bridged over
// .0/.255 for pools with AvoidBuggyIPs.
type taken struct {
	all    *runSet
	avoid4 *runSet
}

func newTaken() taken {
	return taken{all: newRunSet(false), avoid4: newRunSet(true)}
}

func (t taken) add(a netip.Addr) {
	t.all.add(a)
	if a.Is4() {
		t.avoid4.add(a)
	}
}

// remove forgets a; held must already answer false for it.
func (t taken) remove(a netip.Addr, held func(netip.Addr) bool) {
	t.all.remove(a, held)
	if a.Is4() {
		t.avoid4.remove(a, held)
	}
}

// lowestFree returns the lowest address of rg that nobody holds (and,
// with avoidBuggy, that does not end in .0 or .255).
func (t taken) lowestFree(rg iprange.Range, avoidBuggy bool) (netip.Addr, bool) {
	if avoidBuggy && rg.Is4() {
		return t.avoid4.lowestFree(rg, true)
	}
	return t.all.lowestFree(rg, false)
}
