package allocator

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/iprange"
)

// Pool is one IPAddressPool as the allocator sees it.
type Pool struct {
	Name   string
	Ranges []iprange.Range
	// AutoAssign lets any Service take the pool's addresses; without it
	// only Services naming the pool or requesting one of its addresses do.
	AutoAssign bool
	// AvoidBuggyIPs skips IPv4 addresses ending in .0 and .255 (unless a
	// Service requests one explicitly).
	AvoidBuggyIPs bool
	// Reserved are addresses of the pool handed out only to a Service
	// requesting them: the all-zeros address of each IPv6 CIDR, its
	// subnet-router anycast address (RFC 4291). They count as neither
	// available nor occupied.
	Reserved []netip.Addr
	// Priority orders pools, lowest first; nil comes after every pool with
	// a priority. Ties go by Name.
	Priority *int32
	// Namespaces, when set, lists the namespaces whose Services may use
	// the pool.
	Namespaces []string
	// NamespaceSelectors, when set, must have an entry matching the
	// Service's namespace labels.
	NamespaceSelectors []labels.Selector
	// ServiceSelectors, when set, must have an entry matching the
	// Service's labels.
	ServiceSelectors []labels.Selector
	// ShareAcrossNamespaces lists the namespaces whose Services may share
	// the pool's addresses with Services of the other namespaces listed;
	// "*" stands for every namespace. Without it, a sharing key joins only
	// Services of one namespace.
	ShareAcrossNamespaces []string
	// HeldOutside are the addresses the pool's status records as held
	// from it outside its ranges (status.addressesOutsideRanges, written
	// from OutsideRanges), sorted. Restore gives such an address to the
	// pool recording it, whatever the Service's annotation says.
	HeldOutside []netip.Addr
	// OutsideUnrecorded says the pool's status has no current record of
	// those addresses (never written, or by a version without the
	// record): only then does Restore take the Service's annotation's word
	// for an address no pool contains (see restoredPool).
	OutsideUnrecorded bool
	// Closed marks a pool being deleted: its holders keep their addresses
	// but it hands out nothing new.
	Closed bool
}

// poolState is a configured pool with its ranges merged and sorted (IPv4
// first) and its per-family size precomputed.
type poolState struct {
	Pool
	rank     int
	ranges   []iprange.Range
	n4       int         // how many of ranges are IPv4 (they come first)
	eligible [2]*big.Int // addresses it may hand out, per family
	reserved map[netip.Addr]bool
}

func newPoolState(p Pool) (*poolState, error) {
	if p.Name == "" {
		return nil, fmt.Errorf("a pool has no name")
	}
	for _, r := range p.Ranges {
		if !r.IsValid() {
			return nil, fmt.Errorf("pool %s: invalid range %v", p.Name, r)
		}
	}
	for _, sels := range [][]labels.Selector{p.NamespaceSelectors, p.ServiceSelectors} {
		if slices.Contains(sels, nil) {
			return nil, fmt.Errorf("pool %s: nil label selector", p.Name)
		}
	}
	p.Namespaces = slices.Clone(p.Namespaces)
	p.ShareAcrossNamespaces = slices.Clone(p.ShareAcrossNamespaces)
	p.NamespaceSelectors = slices.Clone(p.NamespaceSelectors)
	p.ServiceSelectors = slices.Clone(p.ServiceSelectors)
	ps := &poolState{Pool: p, ranges: iprange.Merge(p.Ranges)}
	ps.Ranges = slices.Clone(ps.ranges)
	ps.n4 = len(ps.ranges)
	if i := slices.IndexFunc(ps.ranges, func(r iprange.Range) bool { return !r.Is4() }); i >= 0 {
		ps.n4 = i
	}
	ps.eligible = [2]*big.Int{new(big.Int), new(big.Int)}
	for _, r := range ps.ranges {
		sum := ps.eligible[familyIndex(familyOf(r.First))]
		sum.Add(sum, eligibleIn(r, p.AvoidBuggyIPs))
	}
	ps.reserved = map[netip.Addr]bool{}
	for _, a := range p.Reserved {
		if !ps.contains(a) || ps.reserved[a] || (p.AvoidBuggyIPs && isBuggy(a)) {
			continue // outside, twice, or not eligible anyway
		}
		ps.reserved[a] = true
		sum := ps.eligible[familyIndex(familyOf(a))]
		sum.Sub(sum, big.NewInt(1))
	}
	ps.Reserved = slices.Clone(p.Reserved)
	return ps, nil
}

// eligibleIn counts the addresses of r a pool may hand out.
func eligibleIn(r iprange.Range, avoidBuggy bool) *big.Int {
	n := r.Size()
	if avoidBuggy && r.Is4() {
		first, last := int64(v4num(r.First)), int64(v4num(r.Last))
		buggy := endingIn(first, last, 0) + endingIn(first, last, 255)
		n.Sub(n, big.NewInt(buggy))
	}
	return n
}

// endingIn counts the x in [first, last] with x%256 == b.
func endingIn(first, last, b int64) int64 {
	upTo := func(n int64) int64 { // how many in [0, n]
		if n < b {
			return 0
		}
		return (n-b)/256 + 1
	}
	return upTo(last) - upTo(first-1)
}

func v4num(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// contains reports whether a is in the pool's current ranges.
func (p *poolState) contains(a netip.Addr) bool {
	i, _ := slices.BinarySearchFunc(p.ranges, a, func(r iprange.Range, a netip.Addr) int {
		return r.Last.Compare(a)
	})
	return i < len(p.ranges) && p.ranges[i].Contains(a)
}

// eligibleAddr reports whether the pool would hand out a (ignoring who
// holds it).
func (p *poolState) eligibleAddr(a netip.Addr) bool {
	return (!p.AvoidBuggyIPs || !isBuggy(a)) && !p.reserved[a]
}

func (p *poolState) hasFamily(f corev1.IPFamily) bool {
	return len(p.rangesOf(f)) > 0
}

// rangesOf returns the pool's ranges of family f, in order.
func (p *poolState) rangesOf(f corev1.IPFamily) []iprange.Range {
	if f == corev1.IPv4Protocol {
		return p.ranges[:p.n4]
	}
	return p.ranges[p.n4:]
}
