package announce

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// groupOf returns k sibling addresses of one family, the i-th group of
// its size: each test looks at many groups, since the owners depend on
// the addresses' weights.
func groupOf(k, i int, v6 bool) []netip.Addr {
	out := make([]netip.Addr, k)
	for j := range out {
		if v6 {
			out[j] = netip.MustParseAddr(fmt.Sprintf("2001:db8:5::%x:%x", i, j))
		} else {
			out[j] = netip.AddrFrom4([4]byte{198, 51, 100, byte(i*k + j)})
		}
	}
	return out
}

// siblingsOver: every address configured on every node of conf, usable
// on those of usable.
func siblingsOver(ips []netip.Addr, conf, usable []string) []Sibling {
	out := make([]Sibling, len(ips))
	for i, ip := range ips {
		out[i] = Sibling{IP: ip, Configured: conf, Usable: usable}
	}
	return out
}

// subsetsWithEmpty is subsets plus the empty set.
func subsetsWithEmpty(nodes []string) [][]string { return append([][]string{nil}, subsets(nodes)...) }

func without(nodes []string, gone string) []string {
	return slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == gone })
}

// TestSpreadOfOneAddressIsOwner: an address alone in its group gets the
// owner rendezvous hashing gives it, for every configured set and every
// usable subset of it: nothing changes for a Service with one address
// per family.
func TestSpreadOfOneAddressIsOwner(t *testing.T) {
	for _, ip := range testIPs(64) {
		for _, conf := range subsets(allNodes) {
			for _, usable := range subsetsWithEmpty(conf) {
				if got, want := Spread([]Sibling{{IP: ip, Configured: conf, Usable: usable}})[0], Owner(ip, usable); got != want {
					t.Fatalf("%s configured on %v, usable %v: Spread %q, Owner %q", ip, conf, usable, got, want)
				}
			}
		}
	}
}

// TestSpreadDistinctOrEven: for groups of two to five addresses, every
// configured set of five nodes and every usable subset of it, each
// address has a usable owner when some node is usable, the owners are
// distinct when there are as many usable nodes as addresses, and else
// every usable node holds as many as any other, give or take one.
func TestSpreadDistinctOrEven(t *testing.T) {
	for k := 2; k <= 5; k++ {
		for g := range 12 {
			ips := groupOf(k, g, g%2 == 1)
			for _, conf := range subsets(allNodes) {
				for _, usable := range subsetsWithEmpty(conf) {
					checkSpread(t, ips, conf, usable, Spread(siblingsOver(ips, conf, usable)))
				}
			}
		}
	}
}

func checkSpread(t *testing.T, ips []netip.Addr, conf, usable, owners []string) {
	t.Helper()
	held := map[string]int{}
	for i, o := range owners {
		if (o == "") != (len(usable) == 0) || o != "" && !slices.Contains(usable, o) {
			t.Fatalf("%v configured on %v, usable %v: %s owned by %q", ips, conf, usable, ips[i], o)
		}
		held[o]++
	}
	if len(usable) == 0 {
		return
	}
	lo, hi := len(ips)/len(usable), (len(ips)+len(usable)-1)/len(usable)
	for _, n := range usable {
		if held[n] < lo || held[n] > hi {
			t.Fatalf("%v configured on %v, usable %v: owners %v, %s holds %d (want %d to %d)", ips, conf, usable, owners, n, held[n], lo, hi)
		}
	}
}

// TestSpreadNodeLossMovesOnlyItsAddresses: for every live set of five
// nodes and every node leaving it, an address moves only when the node
// that left announced it, or when the address had already lost every
// node of its own share (step 2 of Spread). From every node live, only
// the addresses of the node that left ever move; and when it comes back,
// they come back.
func TestSpreadNodeLossMovesOnlyItsAddresses(t *testing.T) {
	for k := 2; k <= 5; k++ {
		for g := range 12 {
			ips := groupOf(k, g, g%2 == 0)
			for _, live := range subsets(allNodes) {
				before := Spread(siblingsOver(ips, allNodes, live))
				shared := shareOwners(ips, allNodes, live)
				for _, gone := range live {
					after := Spread(siblingsOver(ips, allNodes, without(live, gone)))
					for i := range ips {
						if before[i] == gone || after[i] == before[i] {
							continue
						}
						if shared[i] == "" && len(live) < len(allNodes) {
							continue // it had fallen back already
						}
						t.Fatalf("%v live on %v: %s leaving moves %s from %s to %s", ips, live, gone, ips[i], before[i], after[i])
					}
				}
			}
		}
	}
}

// shareOwners: the owners step 1 of Spread gives ("" for an address
// whose share has no usable node).
func shareOwners(ips []netip.Addr, conf, usable []string) []string {
	shares := make([]*ranking, len(ips))
	use := make([]map[string]bool, len(ips))
	for i, ip := range ips {
		shares[i], use[i] = ranked(ip, conf), setOf(usable)
	}
	return draftOwners(shares, use)
}

// TestSpreadKillingOwnersOneByOne: from every node live, speakers die
// one after another, in every order; at each death only the addresses
// of the node that died move, and distinct owners hold while enough
// nodes live. It is the case the shares are for: a failure never
// cascades to the siblings.
func TestSpreadKillingOwnersOneByOne(t *testing.T) {
	orders := permutations(allNodes)
	for k := 2; k <= 4; k++ {
		for g := range 6 {
			ips := groupOf(k, g, g%2 == 0)
			for _, order := range orders {
				live := slices.Clone(allNodes)
				before := Spread(siblingsOver(ips, allNodes, live))
				fallen := false
				for _, gone := range order[:len(order)-1] {
					live = without(live, gone)
					after := Spread(siblingsOver(ips, allNodes, live))
					checkSpread(t, ips, allNodes, live, after)
					for i := range ips {
						if before[i] != gone && after[i] != before[i] && !fallen {
							t.Fatalf("%v, killing %v: %s leaving moves %s from %s to %s", ips, order, gone, ips[i], before[i], after[i])
						}
					}
					fallen = fallen || slices.Contains(shareOwners(ips, allNodes, live), "")
					before = after
				}
			}
		}
	}
}

func permutations(s []string) [][]string {
	if len(s) <= 1 {
		return [][]string{slices.Clone(s)}
	}
	var out [][]string
	for i := range s {
		for _, p := range permutations(append(slices.Clone(s[:i]), s[i+1:]...)) {
			out = append(out, append([]string{s[i]}, p...))
		}
	}
	return out
}

// TestSpreadOrderFree: shuffling the siblings and their node lists, or
// giving each sibling its own configured and usable nodes, changes no
// owner: every speaker computes the same, whatever order its caches
// list things in.
func TestSpreadOrderFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 3))
	for range 2000 {
		k := 2 + rng.IntN(4)
		ips := groupOf(k, rng.IntN(40), rng.IntN(2) == 0)
		sibs := make([]Sibling, k)
		for i, ip := range ips {
			conf := randomSubset(rng, allNodes)
			sibs[i] = Sibling{IP: ip, Configured: conf, Usable: randomSubset(rng, conf)}
		}
		want := Spread(sibs)
		perm := rng.Perm(k)
		shuffled := make([]Sibling, k)
		for i, p := range perm {
			s := sibs[p]
			s.Configured, s.Usable = shuffledCopy(rng, s.Configured), shuffledCopy(rng, s.Usable)
			shuffled[i] = s
		}
		got := Spread(shuffled)
		for i, p := range perm {
			if got[i] != want[p] {
				t.Fatalf("%+v: %s owned by %s, by %s when shuffled", sibs, sibs[p].IP, want[p], got[i])
			}
		}
	}
}

func randomSubset(rng *rand.Rand, nodes []string) []string {
	var out []string
	for _, n := range nodes {
		if rng.IntN(3) != 0 {
			out = append(out, n)
		}
	}
	return out
}

func shuffledCopy(rng *rand.Rand, s []string) []string {
	out := slices.Clone(s)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestRankingIsOwnersOrder: the ranking yields every node once per
// entry, in the order Owner prefers them.
func TestRankingIsOwnersOrder(t *testing.T) {
	for _, ip := range testIPs(64) {
		for _, set := range subsets(allNodes) {
			r := ranked(ip, set)
			left := slices.Clone(set)
			for len(left) > 0 {
				n, ok := r.next()
				if want := Owner(ip, left); !ok || n != want {
					t.Fatalf("%s over %v: next %q, %v; Owner of %v is %q", ip, set, n, ok, left, want)
				}
				left = without(left, n)
			}
			if n, ok := r.next(); ok {
				t.Fatalf("%s over %v: next %q after every node", ip, set, n)
			}
		}
	}
}

// TestSpreadFirstAddressKeepsItsOwner: the lowest address of a group,
// with every configured node usable, gets the node it would get alone:
// asking for more addresses does not move the first.
func TestSpreadFirstAddressKeepsItsOwner(t *testing.T) {
	for k := 2; k <= 5; k++ {
		for g := range 40 {
			ips := groupOf(k, g, g%2 == 0)
			if got, want := Spread(siblingsOver(ips, allNodes, allNodes))[0], Owner(ips[0], allNodes); got != want {
				t.Fatalf("%v: first address owned by %s, alone by %s", ips, got, want)
			}
		}
	}
}

// BenchmarkSpread: one decision of a group (the cost of each of its
// addresses' decisions in L2) with every node live, and with a third of
// them dead.
func BenchmarkSpread(b *testing.B) {
	for _, c := range []struct{ k, nodes int }{{3, 3}, {3, 100}, {16, 1000}} {
		conf := make([]string, c.nodes)
		for i := range conf {
			conf[i] = fmt.Sprintf("node%04d", i)
		}
		ips := groupOf(c.k, 1, true)
		for _, dead := range []int{0, c.nodes / 3} {
			sibs := siblingsOver(ips, conf, conf[dead:])
			b.Run(fmt.Sprintf("k%d/nodes%d/dead%d", c.k, c.nodes, dead), func(b *testing.B) {
				for range b.N {
					Spread(sibs)
				}
			})
		}
	}
}
