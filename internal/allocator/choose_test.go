package allocator

import (
	"testing"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

// Which pool serves a Service with no explicit request.
func TestPoolChoice(t *testing.T) {
	cases := []struct {
		name   string
		pools  []Pool
		req    service.Request
		want   string // pool; "" when the request fails
		reason Reason
		says   []string
	}{
		{name: "by name when no priority",
			pools: []Pool{pool("b", "198.51.100.16/28"), pool("a", "198.51.100.0/28")},
			req:   svc("ns/s"), want: "a"},
		{name: "lower priority first",
			pools: []Pool{pool("a", "198.51.100.0/28", priority(5)), pool("b", "198.51.100.16/28", priority(1))},
			req:   svc("ns/s"), want: "b"},
		{name: "no priority after any priority",
			pools: []Pool{pool("a", "198.51.100.0/28"), pool("z", "198.51.100.16/28", priority(1000))},
			req:   svc("ns/s"), want: "z"},
		{name: "equal priority by name",
			pools: []Pool{pool("b", "198.51.100.16/28", priority(1)), pool("a", "198.51.100.0/28", priority(1))},
			req:   svc("ns/s"), want: "a"},
		{name: "autoAssign off is skipped",
			pools: []Pool{pool("a", "198.51.100.0/28", manual()), pool("b", "198.51.100.16/28")},
			req:   svc("ns/s"), want: "b"},
		{name: "autoAssign off serves when named",
			pools: []Pool{pool("a", "198.51.100.0/28", manual()), pool("b", "198.51.100.16/28")},
			req:   svc("ns/s", fromPool("a")), want: "a"},
		{name: "only autoAssign-off pools",
			pools: []Pool{pool("a", "198.51.100.0/28", manual())},
			req:   svc("ns/s"), reason: NoPoolMatches, says: []string{"pool a: autoAssign is off", "ns/s"}},
		{name: "namespace list",
			pools: []Pool{pool("a", "198.51.100.0/28", inNamespaces("other")), pool("b", "198.51.100.16/28", inNamespaces("ns", "x"))},
			req:   svc("ns/s"), want: "b"},
		{name: "namespace selector",
			pools: []Pool{pool("a", "198.51.100.0/28", nsSelector("team=red")), pool("b", "198.51.100.16/28", nsSelector("team=blue"), nsSelector("team=green"))},
			req:   svc("ns/s", nsLabels("team=green")), want: "b"},
		{name: "service selector",
			pools: []Pool{pool("a", "198.51.100.0/28", svcSelector("tier=web")), pool("b", "198.51.100.16/28")},
			req:   svc("ns/s", svcLabels("tier=web,x=y")), want: "a"},
		{name: "service selector not matched",
			pools: []Pool{pool("a", "198.51.100.0/28", svcSelector("tier=web"))},
			req:   svc("ns/s", svcLabels("tier=db")), reason: NoPoolMatches, says: []string{"serviceSelectors"}},
		{name: "namespace and selector both required",
			pools: []Pool{pool("a", "198.51.100.0/28", inNamespaces("ns"), nsSelector("team=red"))},
			req:   svc("ns/s", nsLabels("team=blue")), reason: NoPoolMatches, says: []string{"namespace ns matches none of its namespaceSelectors"}},
		{name: "closed pool hands out nothing",
			pools: []Pool{pool("a", "198.51.100.0/28", closed(), priority(0)), pool("b", "198.51.100.16/28")},
			req:   svc("ns/s"), want: "b"},
		{name: "family missing",
			pools: []Pool{pool("a", "198.51.100.0/28"), pool("b", "2001:db8::/120")},
			req:   svc("ns/s", single6()), want: "b"},
		{name: "no pool has the family",
			pools: []Pool{pool("a", "198.51.100.0/28")},
			req:   svc("ns/s", single6()), reason: NoPoolMatches, says: []string{"IPv6", "pool a: it has no IPv6 addresses"}},
		{name: "no pools at all",
			req: svc("ns/s"), reason: NoPoolMatches, says: []string{"no pool is configured"}},
		{name: "named pool missing",
			pools: []Pool{pool("a", "198.51.100.0/28")},
			req:   svc("ns/s", fromPool("nope")), reason: PoolNotFound, says: []string{"nope", "does not exist"}},
		{name: "named pool refuses the namespace",
			pools: []Pool{pool("a", "198.51.100.0/28", inNamespaces("other"))},
			req:   svc("ns/s", fromPool("a")), reason: PoolNotAllowed, says: []string{"pool a", "namespace ns is not in its namespaces"}},
		{name: "named pool closed",
			pools: []Pool{pool("a", "198.51.100.0/28", closed())},
			req:   svc("ns/s", fromPool("a")), reason: PoolNotAllowed, says: []string{"being deleted"}},
		{name: "named pool lacks the family",
			pools: []Pool{pool("a", "198.51.100.0/28")},
			req:   svc("ns/s", fromPool("a"), single6()), reason: NoPoolMatches, says: []string{"pool a", "no IPv6"}},
		{name: "named pool wins over priority",
			pools: []Pool{pool("a", "198.51.100.0/28", priority(0)), pool("b", "198.51.100.16/28", priority(9))},
			req:   svc("ns/s", fromPool("b")), want: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, c.pools...)
			if c.want == "" {
				assignFails(t, a, c.req, c.reason, c.says...)
				return
			}
			if asg := mustAssign(t, a, c.req); asg.Pool != c.want {
				t.Errorf("pool %s, want %s", asg.Pool, c.want)
			}
		})
	}
}

func TestManyRefusalsAreSummarized(t *testing.T) {
	var pools []Pool
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		pools = append(pools, pool(n, "198.51.100.0/28", manual()))
		pools[len(pools)-1].Ranges = nil
	}
	a := newAlloc(t, pools...)
	assignFails(t, a, svc("ns/s"), NoPoolMatches, "pool a: autoAssign is off", "pool e", "2 more")
}

func TestSetPoolsRejectsBadConfig(t *testing.T) {
	a := newAlloc(t, pool("a", "198.51.100.0/28"))
	for name, pools := range map[string][]Pool{
		"duplicate": {pool("x", "198.51.100.0/28"), pool("x", "198.51.100.16/28")},
		"no name":   {pool("", "198.51.100.0/28")},
		"bad range": {{Name: "y", Ranges: []iprange.Range{{}}}},
	} {
		if err := a.SetPools(pools); err == nil {
			t.Errorf("%s: SetPools accepted %v", name, pools)
		}
	}
	wantAssignment(t, mustAssign(t, a, svc("ns/s")), "a", "198.51.100.0")
}
