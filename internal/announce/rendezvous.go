package announce

import (
	"hash/fnv"
	"net/netip"
)

// Owner picks the node that announces ip among candidates by rendezvous
// (highest random weight) hashing: every speaker computes the same owner
// from the same candidates, and removing a node moves only the addresses
// it owned. Ties, which need a 64-bit hash collision, go to the smaller
// name. It returns "" when there is no candidate.
func Owner(ip netip.Addr, candidates []string) string {
	best, bestScore := "", uint64(0)
	for _, n := range candidates {
		s := score(n, ip)
		if best == "" || s > bestScore || (s == bestScore && n < best) {
			best, bestScore = n, s
		}
	}
	return best
}

func score(node string, ip netip.Addr) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	b := ip.As16()
	h.Write(b[:])
	// fnv's low bits mix poorly for short inputs; finish with a
	// splitmix64-style avalanche so weights are uniform.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
