package allocator

import (
	"math"
	"math/big"
	"net/netip"
	"slices"
)

// FamilyUsage counts one family's addresses of a pool.
type FamilyUsage struct {
	// Assigned is the number of addresses inside the pool's ranges that
	// Services hold from it (an address shared by several Services counts
	// once).
	Assigned uint64
	// Available is the number of addresses the pool could still hand out,
	// saturated at math.MaxUint64.
	Available uint64
}

// Usage is a pool's address count, per family.
type Usage struct {
	IPv4, IPv6 FamilyUsage
	// OutsideRanges counts addresses Services hold from the pool that its
	// current ranges no longer contain.
	OutsideRanges uint64
}

// poolCounts are the running counts of one pool name.
type poolCounts struct {
	attributed [2]int64 // held addresses attributed to the pool
	inRange    [2]int64 // ... of which inside its current ranges
	occupied   [2]int64 // eligible addresses of its ranges held by anyone
	holders    int      // Services whose assignment is attributed to it
	// outside are the held addresses attributed to the pool that its
	// ranges do not contain (nil when there are none).
	outside map[netip.Addr]struct{}
}

// zero reports whether the counts record nothing.
func (pc *poolCounts) zero() bool {
	return pc.attributed == [2]int64{} && pc.inRange == [2]int64{} && pc.occupied == [2]int64{} &&
		pc.holders == 0 && len(pc.outside) == 0
}

// markOutside records that a, attributed to the pool and outside its
// ranges, became held (delta +1) or free (delta -1).
func (pc *poolCounts) markOutside(a netip.Addr, delta int64) {
	if delta > 0 {
		if pc.outside == nil {
			pc.outside = map[netip.Addr]struct{}{}
		}
		pc.outside[a] = struct{}{}
		return
	}
	delete(pc.outside, a)
}

// counts keeps poolCounts by pool name, so that Usage never walks the
// address book. Entries exist for configured pools and for names that
// still have holders.
type counts map[string]*poolCounts

func (c counts) of(pool string) *poolCounts {
	pc, ok := c[pool]
	if !ok {
		pc = &poolCounts{}
		c[pool] = pc
	}
	return pc
}

// addressTaken records that a (attributed to pool) became held (delta +1)
// or free (delta -1).
func (c counts) addressTaken(a netip.Addr, pool string, pools *poolSet, delta int64) {
	f := familyIndex(familyOf(a))
	if pool != "" {
		pc := c.of(pool)
		pc.attributed[f] += delta
		if p, ok := pools.byName[pool]; ok && p.contains(a) {
			pc.inRange[f] += delta
		} else {
			pc.markOutside(a, delta)
		}
	}
	for _, p := range pools.ordered {
		if p.contains(a) && p.eligibleAddr(a) {
			c.of(p.Name).occupied[f] += delta
		}
	}
}

func (c counts) usage(pool string, pools *poolSet) Usage {
	pc := c[pool]
	if pc == nil {
		pc = &poolCounts{}
	}
	u := Usage{
		IPv4:          FamilyUsage{Assigned: uint64(pc.inRange[0])},
		IPv6:          FamilyUsage{Assigned: uint64(pc.inRange[1])},
		OutsideRanges: uint64(pc.attributed[0] - pc.inRange[0] + pc.attributed[1] - pc.inRange[1]),
	}
	if p, ok := pools.byName[pool]; ok {
		u.IPv4.Available = saturatingSub(p.eligible[0], pc.occupied[0])
		u.IPv6.Available = saturatingSub(p.eligible[1], pc.occupied[1])
	}
	return u
}

// outsideAddrs returns the addresses attributed to pool that its ranges
// do not contain, sorted.
func (c counts) outsideAddrs(pool string) []netip.Addr {
	pc := c[pool]
	if pc == nil || len(pc.outside) == 0 {
		return nil
	}
	out := make([]netip.Addr, 0, len(pc.outside))
	for a := range pc.outside {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func saturatingSub(total *big.Int, used int64) uint64 {
	n := new(big.Int).Sub(total, big.NewInt(used))
	if !n.IsUint64() {
		if n.Sign() < 0 {
			return 0
		}
		return math.MaxUint64
	}
	return n.Uint64()
}
