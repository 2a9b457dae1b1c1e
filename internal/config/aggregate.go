package config

import "net/netip"

// aggregateFits reports whether every /length aggregate of an address in
// [first, last] lies inside [first, last]: first must start an aggregate
// and last must end one.
func aggregateFits(first, last netip.Addr, length int) bool {
	if length >= first.BitLen() {
		return true
	}
	lo, err := first.Prefix(length)
	if err != nil || lo.Addr() != first {
		return false
	}
	hi, err := last.Prefix(length)
	if err != nil {
		return false
	}
	return lastOf(hi) == last
}

// lastOf returns the last address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
