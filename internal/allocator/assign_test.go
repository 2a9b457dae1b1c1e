package allocator

import (
	"fmt"
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

// Which address inside a pool.
func TestAddressChoice(t *testing.T) {
	t.Run("lowest free in range order", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.200-198.51.100.201", "198.51.100.10-198.51.100.11"))
		for i, want := range []string{"198.51.100.10", "198.51.100.11", "198.51.100.200", "198.51.100.201"} {
			wantAssignment(t, mustAssign(t, a, svc(fmt.Sprintf("ns/s%d", i))), "p", want)
		}
		assignFails(t, a, svc("ns/full"), PoolExhausted, "pool p has no free IPv4 address", "ns/full")
	})
	t.Run("a released address comes back first", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/29"))
		for i := range 5 {
			mustAssign(t, a, svc(fmt.Sprintf("ns/s%d", i)))
		}
		a.Release("ns/s2")
		a.Release("ns/s1")
		checkBook(t, a)
		wantAssignment(t, mustAssign(t, a, svc("ns/new")), "p", "198.51.100.1")
		wantAssignment(t, mustAssign(t, a, svc("ns/new2")), "p", "198.51.100.2")
		wantAssignment(t, mustAssign(t, a, svc("ns/new3")), "p", "198.51.100.5")
	})
	t.Run("avoidBuggyIPs skips .0 and .255", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.254-198.51.101.1", avoidBuggy()))
		wantAssignment(t, mustAssign(t, a, svc("ns/a")), "p", "198.51.100.254")
		wantAssignment(t, mustAssign(t, a, svc("ns/b")), "p", "198.51.101.1")
		assignFails(t, a, svc("ns/c"), PoolExhausted)
		if u := a.Usage("p"); u.IPv4.Available != 0 || u.IPv4.Assigned != 2 {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("without avoidBuggyIPs .0 and .255 are handed out", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.255-198.51.101.0"))
		wantAssignment(t, mustAssign(t, a, svc("ns/a")), "p", "198.51.100.255")
		wantAssignment(t, mustAssign(t, a, svc("ns/b")), "p", "198.51.101.0")
	})
	t.Run("avoidBuggyIPs leaves IPv6 alone", func(t *testing.T) {
		a := newAlloc(t, pool("p", "2001:db8::ff-2001:db8::100", avoidBuggy()))
		wantAssignment(t, mustAssign(t, a, svc("ns/a", single6())), "p", "2001:db8::ff")
		wantAssignment(t, mustAssign(t, a, svc("ns/b", single6())), "p", "2001:db8::100")
	})
	t.Run("an address held outside its pool is skipped by the pool that now holds it", func(t *testing.T) {
		a := newAlloc(t, pool("old", "198.51.100.0/30"), pool("new", "198.51.100.4/30"))
		mustAssign(t, a, svc("ns/a", fromPool("old")))
		mustAssign(t, a, svc("ns/b", fromPool("old")))
		if err := a.SetPools([]Pool{pool("new", "198.51.100.0/29")}); err != nil {
			t.Fatal(err)
		}
		wantAssignment(t, mustAssign(t, a, svc("ns/c")), "new", "198.51.100.2")
		if u := a.Usage("new"); u.IPv4.Assigned != 1 || u.IPv4.Available != 5 {
			t.Errorf("usage of new: %+v", u)
		}
	})
	t.Run("a /64 is never enumerated", func(t *testing.T) {
		a := newAlloc(t, pool("p", "2001:db8::/64"))
		wantAssignment(t, mustAssign(t, a, svc("ns/a", single6())), "p", "2001:db8::")
		wantAssignment(t, mustAssign(t, a, svc("ns/b", single6())), "p", "2001:db8::1")
		if u := a.Usage("p"); u.IPv6.Available != 1<<64-1-1 || u.IPv6.Assigned != 2 {
			t.Errorf("usage %+v", u)
		}
	})
}

// Which families a Service gets.
func TestFamilies(t *testing.T) {
	dual := pool("dual", "198.51.100.0/28", "2001:db8::/120")
	only4 := pool("only4", "198.51.100.16/28", priority(0))
	only6 := pool("only6", "2001:db8:1::/120", priority(0))
	cases := []struct {
		name   string
		pools  []Pool
		req    service.Request
		pool   string
		ips    []string
		reason Reason
	}{
		{"single v4", []Pool{dual}, svc("ns/s"), "dual", []string{"198.51.100.0"}, ""},
		{"single v6", []Pool{dual}, svc("ns/s", single6()), "dual", []string{"2001:db8::"}, ""},
		{"require dual, v4 primary", []Pool{dual}, svc("ns/s", requireDual(v4, v6)), "dual", []string{"198.51.100.0", "2001:db8::"}, ""},
		{"require dual, v6 primary", []Pool{dual}, svc("ns/s", requireDual(v6, v4)), "dual", []string{"2001:db8::", "198.51.100.0"}, ""},
		{"require dual skips single-family pools", []Pool{only4, dual}, svc("ns/s", requireDual(v4, v6)), "dual", []string{"198.51.100.0", "2001:db8::"}, ""},
		{"require dual never splits across pools", []Pool{only4, only6}, svc("ns/s", requireDual(v4, v6)), "", nil, NoPoolMatches},
		{"prefer dual gets both", []Pool{only4, dual}, svc("ns/s", preferDual(v4, v6)), "dual", []string{"198.51.100.0", "2001:db8::"}, ""},
		{"prefer dual falls back to the primary", []Pool{only4}, svc("ns/s", preferDual(v4, v6)), "only4", []string{"198.51.100.16"}, ""},
		{"prefer dual, v6 primary, falls back to v6", []Pool{only4, only6}, svc("ns/s", preferDual(v6, v4)), "only6", []string{"2001:db8:1::"}, ""},
		{"prefer dual on a single-stack cluster", []Pool{dual}, svc("ns/s", preferDual(v6)), "dual", []string{"2001:db8::"}, ""},
		{"prefer dual, primary missing everywhere", []Pool{only4}, svc("ns/s", preferDual(v6, v4)), "", nil, NoPoolMatches},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, c.pools...)
			if c.reason != "" {
				assignFails(t, a, c.req, c.reason)
				return
			}
			wantAssignment(t, mustAssign(t, a, c.req), c.pool, c.ips...)
		})
	}
}

func TestFamiliesWhenExhausted(t *testing.T) {
	t.Run("prefer dual takes the primary when the dual pool lacks the second family", func(t *testing.T) {
		a := newAlloc(t, pool("dual", "198.51.100.0/30", "2001:db8::/128"))
		mustAssign(t, a, svc("ns/six", single6()))
		wantAssignment(t, mustAssign(t, a, svc("ns/s", preferDual(v4, v6))), "dual", "198.51.100.0")
	})
	t.Run("require dual fails when one family is exhausted", func(t *testing.T) {
		a := newAlloc(t, pool("dual", "198.51.100.0/30", "2001:db8::/128"))
		mustAssign(t, a, svc("ns/six", single6()))
		assignFails(t, a, svc("ns/s", requireDual(v4, v6)), PoolExhausted, "pool dual has no free IPv6 address")
	})
	t.Run("next pool when the first is full", func(t *testing.T) {
		a := newAlloc(t, pool("a", "198.51.100.0/32", priority(1)), pool("b", "198.51.100.8/32", priority(2)))
		wantAssignment(t, mustAssign(t, a, svc("ns/1")), "a", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/2")), "b", "198.51.100.8")
		assignFails(t, a, svc("ns/3"), PoolExhausted, "pool a has no free IPv4 address", "pool b has no free IPv4 address")
	})
}

func TestInvalidRequests(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	cases := map[string]struct {
		req  service.Request
		says string
	}{
		"no key":                        {svc(""), "no Service key"},
		"no families":                   {svc("ns/s", families("SingleStack")), "one or two families"},
		"three families":                {svc("ns/s", families("PreferDualStack", v4, v6, v4)), "one or two"},
		"one family twice":              {svc("ns/s", preferDual(v4, v4)), "IPv4 twice"},
		"unknown family":                {svc("ns/s", families("SingleStack", "IPv5")), "IPv5"},
		"single stack, two":             {svc("ns/s", families("SingleStack", v4, v6)), "SingleStack with two"},
		"require dual, one":             {svc("ns/s", requireDual(v4)), "RequireDualStack with only IPv4"},
		"unknown policy":                {svc("ns/s", families("Sometimes", v4)), "Sometimes"},
		"two requested of a family":     {svc("ns/s", preferDual(v4, v6), ips("198.51.100.1", "198.51.100.2")), "requests 2 IPv4 addresses"},
		"requested of a missing family": {svc("ns/s", ips("2001:db8::1")), "2001:db8::1, but its ipFamilies are [IPv4]"},
		"require dual, one requested":   {svc("ns/s", requireDual(v4, v6), ips("198.51.100.1")), "requests only 198.51.100.1"},
		"zoned request":                 {svc("ns/s", single6(), ips("fe80::1%eth0")), "zone"},
		"mapped request":                {svc("ns/s", single6(), ips("::ffff:198.51.100.1")), "write 198.51.100.1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assignFails(t, a, c.req, InvalidRequest, c.says)
		})
	}
	t.Run("an invalid edit keeps the address", func(t *testing.T) {
		mustAssign(t, a, svc("ns/keep"))
		assignFails(t, a, svc("ns/keep", ips("198.51.100.1", "198.51.100.2")), InvalidRequest)
	})
}
