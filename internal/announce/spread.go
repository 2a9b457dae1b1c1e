package announce

import (
	"net/netip"
	"slices"
)

// Sibling is one address of a group that L2 spreads over different nodes
// (a Service's addresses of one family, see siblings).
type Sibling struct {
	IP netip.Addr
	// Configured are the nodes the configuration lets announce the
	// address, live or not: eligible (NodeEligibleWith) and selected by
	// an L2Advertisement covering it. A speaker dying changes nothing
	// here.
	Configured []string
	// Usable are the nodes that may announce it now: those of Configured
	// whose speaker is alive and, with externalTrafficPolicy: Local, that
	// have the local endpoints SharedLocalNodes asks for.
	Usable []string
}

// Spread decides the owners of a group of sibling addresses, aligned with
// sibs ("" when no node may announce an address). It is pure, and its
// result does not depend on the order of sibs or of their node lists.
//
// The rule, in two steps:
//
//  1. Shares. The siblings, in address order, take turns picking a node
//     from their Configured nodes not yet picked, each its highest by
//     rendezvous weight (score), until the nodes run out: every sibling
//     gets its own share of the configured nodes, the shares disjoint and
//     of sizes within one of each other. An address is announced by the
//     first Usable node of its share. Shares depend on the configuration
//     alone, so a speaker dying moves only the address its node
//     announced (to the next node of that address's share) and coming
//     back brings it home again; disjoint shares give distinct owners.
//  2. Fallback. An address whose share has no Usable node goes, in
//     address order, to the Usable node holding the fewest of its
//     siblings, ties to the highest weight: distinct owners while there
//     are as many usable nodes as addresses, else as even as can be.
//     Such addresses are the only ones that may move when another
//     sibling does.
//
// With one address, its share is every configured node in weight order:
// the owner is Owner(ip, Usable), the choice for a single address.
func Spread(sibs []Sibling) []string {
	order := make([]int, len(sibs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return sibs[a].IP.Compare(sibs[b].IP) })
	shares := make([]*ranking, len(order))
	usable := make([]map[string]bool, len(order))
	for k, i := range order {
		shares[k] = ranked(sibs[i].IP, sibs[i].Configured)
		if k > 0 && sameSlice(sibs[i].Usable, sibs[order[k-1]].Usable) {
			usable[k] = usable[k-1] // L2 gives siblings of one pool one list
			continue
		}
		usable[k] = setOf(sibs[i].Usable)
	}
	owners := draftOwners(shares, usable)
	fallBack(sibs, order, owners)
	out := make([]string, len(sibs))
	for k, i := range order {
		out[i] = owners[k]
	}
	return out
}

// draftOwners runs step 1 of Spread: the siblings pick nodes in turns,
// each the best of its ranking not yet taken; each one's owner is its
// first usable pick. It stops as soon as every sibling has an owner or
// no one can pick.
func draftOwners(rankings []*ranking, usable []map[string]bool) []string {
	owners := make([]string, len(rankings))
	taken := map[string]bool{}
	found := 0
	for picked := true; picked && found < len(rankings); {
		picked = false
		for k, r := range rankings {
			n, ok := r.next()
			for ok && taken[n] {
				n, ok = r.next()
			}
			if !ok {
				continue
			}
			taken[n], picked = true, true
			if owners[k] == "" && usable[k][n] {
				owners[k] = n
				found++
			}
		}
	}
	return owners
}

// fallBack runs step 2 of Spread: each sibling without an owner, in
// address order, goes to the usable node holding the fewest siblings so
// far, ties to its highest weight.
func fallBack(sibs []Sibling, order []int, owners []string) {
	held := map[string]int{}
	for _, o := range owners {
		if o != "" {
			held[o]++
		}
	}
	for k, i := range order {
		if owners[k] != "" {
			continue
		}
		ip := sibs[i].IP
		best, bestScore := "", uint64(0)
		for _, n := range sibs[i].Usable {
			s := score(n, ip)
			if best == "" || held[n] < held[best] ||
				held[n] == held[best] && (s > bestScore || s == bestScore && n < best) {
				best, bestScore = n, s
			}
		}
		if best != "" {
			owners[k] = best
			held[best]++
		}
	}
}

// ranking yields nodes by decreasing rendezvous weight for one address,
// ties to the smaller name (Owner's order): a heap, so that the draft,
// which mostly needs a node or two of each address, does not sort them
// all.
type ranking []weighted

type weighted struct {
	name  string
	score uint64
}

func ranked(ip netip.Addr, nodes []string) *ranking {
	r := make(ranking, 0, len(nodes))
	for _, n := range nodes {
		r = append(r, weighted{n, score(n, ip)})
	}
	for i := len(r)/2 - 1; i >= 0; i-- {
		r.down(i)
	}
	return &r
}

// next pops the best node left; false when none is.
func (r *ranking) next() (string, bool) {
	h := *r
	if len(h) == 0 {
		return "", false
	}
	top := h[0].name
	h[0] = h[len(h)-1]
	*r = h[:len(h)-1]
	r.down(0)
	return top, true
}

func (r ranking) before(i, j int) bool {
	if r[i].score != r[j].score {
		return r[i].score > r[j].score
	}
	return r[i].name < r[j].name
}

func (r ranking) down(i int) {
	for {
		best, l := i, 2*i+1
		if l < len(r) && r.before(l, best) {
			best = l
		}
		if l+1 < len(r) && r.before(l+1, best) {
			best = l + 1
		}
		if best == i {
			return
		}
		r[i], r[best] = r[best], r[i]
		i = best
	}
}

// sameSlice reports whether a and b are the same slice (not only equal).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func setOf(nodes []string) map[string]bool {
	out := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		out[n] = true
	}
	return out
}

// siblings returns the group ip is spread with: the addresses of ip's
// family that the Services holding it hold, sorted (ip among them).
// Services sharing an address hold the same addresses when the
// controller allocated them together; when they do not, each address's
// group is still a function of its holders alone, so the owners stay
// deterministic, only perhaps not distinct.
func siblings(ip netip.Addr, svcs []*Service) []netip.Addr {
	out := []netip.Addr{ip}
	for _, s := range svcs {
		for _, a := range s.IPs {
			if a.Is4() == ip.Is4() && a != ip {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// hasSiblings reports whether ip has siblings, without allocating: the
// common case, one address per family, costs no more than a scan.
func hasSiblings(ip netip.Addr, svcs []*Service) bool {
	for _, s := range svcs {
		for _, a := range s.IPs {
			if a.Is4() == ip.Is4() && a != ip {
				return true
			}
		}
	}
	return false
}
