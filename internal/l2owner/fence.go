package l2owner

import (
	"bytes"
	"hash/fnv"
	"net"
	"net/netip"
)

// Wins says whether the host with MAC ours keeps addr when the host with
// MAC theirs announces it too (both speakers' nodes): the split-brain
// fence. Both sides compute the same answer without talking: the higher
// rendezvous weight of (MAC, address) wins, ties (a 64-bit collision) to
// the smaller MAC. The weight varies with the address, so the addresses
// of a split brain are spread between the two sides, not all given to
// one.
func Wins(addr netip.Addr, ours, theirs net.HardwareAddr) bool {
	a, b := macWeight(ours, addr), macWeight(theirs, addr)
	if a != b {
		return a > b
	}
	return bytes.Compare(ours, theirs) < 0
}

func macWeight(mac net.HardwareAddr, addr netip.Addr) uint64 {
	h := fnv.New64a()
	h.Write(mac)
	b := addr.As16()
	h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
