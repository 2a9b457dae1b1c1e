package allocator

import (
	"github.com/herald-lb/herald/internal/iprange"

	"maps"
	"net/netip"
	"slices"
	"testing"
)

// checkBook verifies every internal invariant of a by brute force: the
// book, the sharing index, both run sets and the counts.
func checkBook(t testing.TB, a *Allocator) {
	t.Helper()
	if err := bookProblem(a); err != "" {
		t.Fatal(err)
	}
}

func bookProblem(a *Allocator) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, check := range []func(*Allocator) string{checkHolders, checkAddresses, checkShared, checkRuns, checkCounts} {
		if msg := check(a); msg != "" {
			return msg
		}
	}
	return ""
}

func checkHolders(a *Allocator) string {
	for key, h := range a.book.byKey {
		if h.key != key || len(h.ips) == 0 {
			return "holder " + key + " is malformed"
		}
		for _, ip := range h.ips {
			ha := a.book.addrs[ip]
			if ha == nil || !slices.Contains(ha.holders, h) {
				return key + " holds " + ip.String() + " but the book does not say so"
			}
			if ha.pool != h.pool || ha.sharingKey != h.sharingKey {
				return key + ": pool or sharing key differs from its address " + ip.String()
			}
		}
	}
	return ""
}

func checkAddresses(a *Allocator) string {
	for ip, ha := range a.book.addrs {
		if len(ha.holders) == 0 {
			return ip.String() + " is held by nobody"
		}
		if !slices.IsSortedFunc(ha.holders, func(x, y *holder) int { return holderKeyCmp(x, y.key) }) {
			return ip.String() + ": holders not sorted"
		}
		for i, h := range ha.holders {
			if a.book.byKey[h.key] != h || !slices.Contains(h.ips, ip) {
				return ip.String() + " lists a stale holder " + h.key
			}
			for _, o := range ha.holders[i+1:] {
				later := o
				if h.since > o.since {
					later = h
				}
				if ok, why := compatible(h, o); !ok && !a.book.yielding[later.key] {
					return ip.String() + " is held by " + h.key + " and " + o.key + ", which may not share: " + why
				}
			}
		}
	}
	return ""
}

func checkShared(a *Allocator) string {
	want := map[string][]netip.Addr{}
	for ip, ha := range a.book.addrs {
		if ha.sharingKey != "" {
			want[ha.sharingKey] = append(want[ha.sharingKey], ip)
		}
	}
	for k := range want {
		slices.SortFunc(want[k], netip.Addr.Compare)
	}
	if !maps.EqualFunc(want, a.book.shared, slices.Equal) {
		return "the sharing-key index is out of date"
	}
	return ""
}

func checkRuns(a *Allocator) string {
	if msg := checkRunSet(a, a.book.taken.all, false); msg != "" {
		return "plain runs: " + msg
	}
	if msg := checkRunSet(a, a.book.taken.avoid4, true); msg != "" {
		return "bridged runs: " + msg
	}
	return ""
}

// checkRunSet checks that the runs are ordered, maximal, bounded by held
// addresses and cover exactly the held addresses (IPv4 only when bridged).
func checkRunSet(a *Allocator, s *runSet, bridged bool) string {
	var prev *run
	covered := 0
	msg := ""
	s.tree.Ascend(func(r run) bool {
		switch {
		case !a.book.held(r.first) || !a.book.held(r.last) || r.last.Less(r.first):
			msg = "run " + r.first.String() + "-" + r.last.String() + " is not bounded by held addresses"
		case prev != nil && (!prev.last.Less(r.first) || s.bridges(prev.last, r.first)):
			msg = "runs ending " + prev.last.String() + " and starting " + r.first.String() + " should be one"
		}
		for z := r.first; msg == ""; z = z.Next() {
			if a.book.held(z) {
				covered++
			} else if !bridged || !isBuggy(z) {
				msg = "run " + r.first.String() + "-" + r.last.String() + " holds the free address " + z.String()
			}
			if z == r.last {
				break
			}
		}
		prev = &r
		return msg == ""
	})
	if msg != "" {
		return msg
	}
	want := 0
	for ip := range a.book.addrs {
		if !bridged || ip.Is4() {
			want++
		}
	}
	for ip := range a.book.quarantined { // quarantined addresses are in the runs too
		if !bridged || ip.Is4() {
			want++
		}
	}
	if covered != want {
		return "runs cover a different number of addresses than are held"
	}
	return ""
}

func checkCounts(a *Allocator) string {
	want := counts{}
	for name := range a.pools.byName {
		want.of(name)
	}
	for ip, ha := range a.book.addrs {
		f := familyIndex(familyOf(ip))
		if ha.pool != "" {
			want.of(ha.pool).attributed[f]++
			if p := a.pools.byName[ha.pool]; p != nil && slices.ContainsFunc(p.Ranges, func(r iprange.Range) bool { return r.Contains(ip) }) {
				want.of(ha.pool).inRange[f]++
			} else {
				want.of(ha.pool).markOutside(ip, +1)
			}
		}
		for _, p := range a.pools.ordered {
			inside := slices.ContainsFunc(p.Ranges, func(r iprange.Range) bool { return r.Contains(ip) })
			if inside && !(p.AvoidBuggyIPs && isBuggy(ip)) && !slices.Contains(p.Reserved, ip) {
				want.of(p.Name).occupied[f]++
			}
		}
	}
	for _, h := range a.book.byKey {
		want.of(h.pool).holders++
	}
	for name, pc := range want {
		got := a.counts[name]
		if got == nil {
			got = &poolCounts{}
		}
		if !sameCounts(got, pc) {
			return "counts of pool " + name + " are off"
		}
	}
	for name, pc := range a.counts {
		if _, ok := want[name]; !ok && !pc.zero() {
			return "stale counts for pool " + name
		}
	}
	return ""
}

func sameCounts(a, b *poolCounts) bool {
	return a.attributed == b.attributed && a.inRange == b.inRange && a.occupied == b.occupied &&
		a.holders == b.holders && maps.Equal(a.outside, b.outside)
}
