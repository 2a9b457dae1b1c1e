package allocator

import (
	"math"
	"testing"
)

func TestUsage(t *testing.T) {
	a := newAlloc(t,
		pool("v4", "198.51.100.0/28", "198.51.100.64-198.51.100.65", priority(0)),
		pool("dual", "198.51.101.0/24", "2001:db8::/64", avoidBuggy()),
		pool("huge", "2001:db8:1::/48"),
	)
	mustAssign(t, a, svc("ns/a"))
	mustAssign(t, a, svc("ns/b", sharing("k")))
	mustAssign(t, a, svc("ns/c", sharing("k"), ports("UDP/53")))
	mustAssign(t, a, svc("ns/d", fromPool("dual"), requireDual(v4, v6)))
	mustAssign(t, a, svc("ns/e", fromPool("huge"), single6()))
	want := map[string]Usage{
		"v4":   {IPv4: FamilyUsage{Assigned: 2, Available: 16}},
		"dual": {IPv4: FamilyUsage{Assigned: 1, Available: 253}, IPv6: FamilyUsage{Assigned: 1, Available: math.MaxUint64}},
		"huge": {IPv6: FamilyUsage{Assigned: 1, Available: math.MaxUint64}},
		"none": {},
	}
	for name, w := range want {
		if got := a.Usage(name); got != w {
			t.Errorf("Usage(%s) = %+v, want %+v", name, got, w)
		}
	}
	holders := map[string]int{"v4": 3, "dual": 1, "huge": 1, "none": 0}
	for name, w := range holders {
		if got := a.Holders(name); got != w {
			t.Errorf("Holders(%s) = %d, want %d", name, got, w)
		}
	}

	// The pools shrink and one goes: nothing moves, the counts say where.
	if err := a.SetPools([]Pool{pool("v4", "198.51.100.1/32"), pool("dual", "2001:db8::/64", closed())}); err != nil {
		t.Fatal(err)
	}
	checkBook(t, a)
	want = map[string]Usage{
		"v4":   {IPv4: FamilyUsage{Assigned: 1, Available: 0}, OutsideRanges: 1},
		"dual": {IPv6: FamilyUsage{Assigned: 1, Available: math.MaxUint64}, OutsideRanges: 1},
		"huge": {OutsideRanges: 1},
	}
	for name, w := range want {
		if got := a.Usage(name); got != w {
			t.Errorf("after SetPools: Usage(%s) = %+v, want %+v", name, got, w)
		}
	}
	a.Release("ns/e")
	if a.Holders("huge") != 0 || a.Usage("huge") != (Usage{}) {
		t.Errorf("huge still counted after its last holder left")
	}
	a.Release("ns/b")
	a.Release("ns/c")
	if got := a.Usage("v4"); got != (Usage{IPv4: FamilyUsage{Available: 1}, OutsideRanges: 1}) {
		t.Errorf("after releasing the shared address: %+v", got)
	}
	checkBook(t, a)
}

func TestEligibleCounts(t *testing.T) {
	cases := []struct {
		rng   string
		avoid bool
	}{
		{"198.51.100.0/24", true}, {"198.51.100.0/23", true}, {"198.51.100.255-198.51.101.0", true},
		{"198.51.100.1-198.51.100.254", true}, {"198.51.100.7/32", true}, {"198.51.100.0/32", true},
		{"198.51.100.250-198.51.103.3", true}, {"198.51.100.250-198.51.103.3", false},
	}
	for _, c := range cases {
		opts := []any{c.rng}
		if c.avoid {
			opts = append(opts, avoidBuggy())
		}
		ps, err := newPoolState(pool("p", opts...))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		r := ps.ranges[0]
		for z := r.First; r.Contains(z); z = z.Next() {
			if ps.eligibleAddr(z) {
				want++
			}
		}
		if ps.eligible[0].Int64() != want {
			t.Errorf("%s avoid=%v: eligible %v, want %d", c.rng, c.avoid, ps.eligible[0], want)
		}
	}
}
