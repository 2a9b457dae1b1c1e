package announce

import (
	"net/netip"
	"slices"
	"strings"
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
	shares := make([][]string, len(order))
	usable := make([]map[string]bool, len(order))
	for k, i := range order {
		shares[k] = ranked(sibs[i].IP, sibs[i].Configured)
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

// draftOwners runs step 1 of Spread: the siblings pick nodes in turns
// from their ranked lists; each one's owner is its first usable pick.
// It stops as soon as every sibling has an owner or no one can pick.
func draftOwners(ranked [][]string, usable []map[string]bool) []string {
	owners := make([]string, len(ranked))
	next := make([]int, len(ranked))
	taken := map[string]bool{}
	found := 0
	for picked := true; picked && found < len(ranked); {
		picked = false
		for k, list := range ranked {
			for next[k] < len(list) && taken[list[next[k]]] {
				next[k]++
			}
			if next[k] == len(list) {
				continue
			}
			n := list[next[k]]
			taken[n], picked = true, true
			next[k]++
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

// ranked returns nodes by decreasing rendezvous weight for ip, ties to the
// smaller name (Owner's order), without duplicates.
func ranked(ip netip.Addr, nodes []string) []string {
	type weighted struct {
		name  string
		score uint64
	}
	ws := make([]weighted, 0, len(nodes))
	for _, n := range nodes {
		ws = append(ws, weighted{n, score(n, ip)})
	}
	slices.SortFunc(ws, func(a, b weighted) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, len(ws))
	for i, w := range ws {
		if i == 0 || w.name != ws[i-1].name {
			out = append(out, w.name)
		}
	}
	return out
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
