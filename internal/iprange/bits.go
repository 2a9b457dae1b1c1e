package iprange

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// v4 returns an IPv4 address as a number.
func v4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// split16 returns the high and low 64 bits of an address in its 16-byte
// form (IPv4 addresses are IPv4-mapped there).
func split16(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// commonPrefixLen returns how many leading bits a and b (one family) share.
func commonPrefixLen(a, b netip.Addr) int {
	if a.Is4() {
		return bits.LeadingZeros32(v4(a) ^ v4(b))
	}
	ah, al := split16(a)
	bh, bl := split16(b)
	if ah != bh {
		return bits.LeadingZeros64(ah ^ bh)
	}
	return 64 + bits.LeadingZeros64(al^bl)
}

// lastOfPrefix returns the last address of p: its address with every host
// bit set.
func lastOfPrefix(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if a.Is4() {
		host := uint32(0)
		if p.Bits() < 32 {
			host = ^uint32(0) >> p.Bits()
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v4(a)|host)
		return netip.AddrFrom4(b)
	}
	hi, lo := split16(a)
	hostHi, hostLo := hostMask128(p.Bits())
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi|hostHi)
	binary.BigEndian.PutUint64(b[8:], lo|hostLo)
	return netip.AddrFrom16(b)
}

// hostMask128 returns the host-bit mask of a /bits IPv6 prefix.
func hostMask128(bits int) (hi, lo uint64) {
	switch {
	case bits >= 128:
		return 0, 0
	case bits >= 64:
		return 0, ^uint64(0) >> (bits - 64)
	case bits == 0:
		return ^uint64(0), ^uint64(0)
	default:
		return ^uint64(0) >> bits, ^uint64(0)
	}
}
