package iprange

import (
	"math"
	"math/big"
	"math/bits"
	"net/netip"
)

// Range is an inclusive range of addresses of one family: First <= Last,
// both IPv4 or both IPv6, neither with a zone. Build one with Parse or
// FromPrefix; the zero Range is invalid.
type Range struct {
	First netip.Addr
	Last  netip.Addr
}

// FromPrefix returns the range of every address in p (masked first).
func FromPrefix(p netip.Prefix) Range {
	p = p.Masked()
	return Range{First: p.Addr(), Last: lastOfPrefix(p)}
}

// IsValid reports whether r holds two addresses of one family, without
// zones, in order.
func (r Range) IsValid() bool {
	return r.First.IsValid() && r.Last.IsValid() &&
		r.First.Zone() == "" && r.Last.Zone() == "" &&
		r.First.BitLen() == r.Last.BitLen() &&
		r.First.Compare(r.Last) <= 0
}

// Is4 reports whether r is an IPv4 range.
func (r Range) Is4() bool { return r.First.Is4() }

// Contains reports whether addr lies in r. An address of the other family,
// or one with a zone, is never contained.
func (r Range) Contains(addr netip.Addr) bool {
	return addr.IsValid() && addr.Zone() == "" &&
		addr.BitLen() == r.First.BitLen() &&
		r.First.Compare(addr) <= 0 && addr.Compare(r.Last) <= 0
}

// Overlaps reports whether r and o share at least one address.
func (r Range) Overlaps(o Range) bool {
	return r.First.BitLen() == o.First.BitLen() &&
		r.First.Compare(o.Last) <= 0 && o.First.Compare(r.Last) <= 0
}

// Compare orders ranges by first address (IPv4 before IPv6), then by last
// address. It returns -1, 0 or +1, for slices.SortFunc.
func (r Range) Compare(o Range) int {
	if c := r.First.Compare(o.First); c != 0 {
		return c
	}
	return r.Last.Compare(o.Last)
}

// Size returns the exact number of addresses in r (up to 2^128 for the
// whole IPv6 space, which no fixed-width integer holds).
func (r Range) Size() *big.Int {
	first, last := r.First.As16(), r.Last.As16()
	n := new(big.Int).SetBytes(last[:])
	n.Sub(n, new(big.Int).SetBytes(first[:]))
	return n.Add(n, big.NewInt(1))
}

// SizeUint64 returns the number of addresses in r, saturated at
// math.MaxUint64 (a /64 holds 2^64 addresses, one more than fits).
func (r Range) SizeUint64() uint64 {
	if r.Is4() {
		return uint64(v4(r.Last)-v4(r.First)) + 1
	}
	fh, fl := split16(r.First)
	lh, ll := split16(r.Last)
	lo, borrow := bits.Sub64(ll, fl, 0)
	if hi := lh - fh - borrow; hi != 0 || lo == math.MaxUint64 {
		return math.MaxUint64
	}
	return lo + 1
}

// Prefix returns the prefix that covers exactly r, if there is one.
func (r Range) Prefix() (netip.Prefix, bool) {
	bits := commonPrefixLen(r.First, r.Last)
	p := netip.PrefixFrom(r.First, bits)
	if p.Masked().Addr() != r.First || lastOfPrefix(p) != r.Last {
		return netip.Prefix{}, false
	}
	return p, true
}

// String returns the CIDR when r is exactly one prefix, else "first-last".
// Parse reads it back to the same Range.
func (r Range) String() string {
	if !r.IsValid() {
		return "invalid range " + r.First.String() + "-" + r.Last.String()
	}
	if p, ok := r.Prefix(); ok {
		return p.String()
	}
	return r.First.String() + "-" + r.Last.String()
}
