package allocator

import (
	"net/netip"

	"github.com/google/btree"

	"github.com/herald-lb/herald/internal/iprange"
)

// run is a maximal stretch of taken addresses, first and last inclusive;
// both ends are held addresses.
type run struct {
	first, last netip.Addr
}

func runLess(a, b run) bool { return a.first.Less(b.first) }

// runSet keeps the taken addresses as a B-tree of runs, so that "the
// lowest free address of a range" is two tree look-ups whatever the number
// of addresses held or the size of the range.
//
// With bridgeBuggy, unheld IPv4 addresses ending in .0 or .255 count as
// taken when they sit between or inside runs (never at a run's ends): the
// set then answers for pools that avoid those addresses, where runs would
// otherwise break every 256 addresses.
type runSet struct {
	tree        *btree.BTreeG[run]
	bridgeBuggy bool
}

func newRunSet(bridgeBuggy bool) *runSet {
	return &runSet{tree: btree.NewG(32, runLess), bridgeBuggy: bridgeBuggy}
}

// isBuggy reports whether a is an IPv4 address ending in .0 or .255.
func isBuggy(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	last := a.As4()[3]
	return last == 0 || last == 255
}

// containing returns the run holding a.
func (s *runSet) containing(a netip.Addr) (run, bool) {
	found, ok := s.before(a)
	if !ok || found.last.Less(a) {
		return run{}, false
	}
	return found, true
}

// bridges reports whether every address strictly between x and y (x < y,
// one family) is taken by the set's rules: none, or, with bridgeBuggy,
// only .0/.255 addresses (at most two in a row).
func (s *runSet) bridges(x, y netip.Addr) bool {
	z := x.Next()
	for range 3 {
		if z == y {
			return true
		}
		if !s.bridgeBuggy || !isBuggy(z) {
			return false
		}
		z = z.Next()
	}
	return false
}

// add records a newly held address.
func (s *runSet) add(a netip.Addr) {
	if _, ok := s.containing(a); ok {
		return // an unheld .0/.255 inside a bridged run
	}
	r := run{first: a, last: a}
	if prev, ok := s.before(a); ok && s.bridges(prev.last, a) {
		s.tree.Delete(prev)
		r.first = prev.first
	}
	if next, ok := s.after(a); ok && s.bridges(a, next.first) {
		s.tree.Delete(next)
		r.last = next.last
	}
	s.tree.ReplaceOrInsert(r)
}

// remove records that a is no longer held; held answers for the others.
func (s *runSet) remove(a netip.Addr, held func(netip.Addr) bool) {
	r, ok := s.containing(a)
	if !ok {
		return
	}
	if s.bridgeBuggy && isBuggy(a) && r.first != a && r.last != a {
		return // still bridged: its neighbours keep the run whole
	}
	s.tree.Delete(r)
	if r.first != a {
		s.tree.ReplaceOrInsert(run{first: r.first, last: lastHeldBefore(a, held)})
	}
	if r.last != a {
		s.tree.ReplaceOrInsert(run{first: firstHeldAfter(a, held), last: r.last})
	}
}

// lastHeldBefore returns the last held address below a inside its run
// (at most two bridged addresses away).
func lastHeldBefore(a netip.Addr, held func(netip.Addr) bool) netip.Addr {
	z := a.Prev()
	for !held(z) {
		z = z.Prev()
	}
	return z
}

func firstHeldAfter(a netip.Addr, held func(netip.Addr) bool) netip.Addr {
	z := a.Next()
	for !held(z) {
		z = z.Next()
	}
	return z
}

// before returns the run starting at or below a.
func (s *runSet) before(a netip.Addr) (run, bool) {
	var found run
	ok := false
	s.tree.DescendLessOrEqual(run{first: a}, func(r run) bool {
		found, ok = r, true
		return false
	})
	return found, ok
}

// after returns the first run starting above a.
func (s *runSet) after(a netip.Addr) (run, bool) {
	var found run
	ok := false
	s.tree.AscendGreaterOrEqual(run{first: a}, func(r run) bool {
		if r.first == a {
			return true
		}
		found, ok = r, true
		return false
	})
	return found, ok
}

// lowestFree returns the lowest address of rg that the set does not hold,
// skipping .0/.255 when avoidBuggy (then the set must bridge them). Runs
// are maximal, so the loop turns at most a few times.
func (s *runSet) lowestFree(rg iprange.Range, avoidBuggy bool) (netip.Addr, bool) {
	c := rg.First
	for {
		for avoidBuggy && isBuggy(c) && rg.Contains(c) {
			c = c.Next()
		}
		if !rg.Contains(c) {
			return netip.Addr{}, false
		}
		r, ok := s.containing(c)
		if !ok {
			return c, true
		}
		c = r.last.Next()
	}
}
