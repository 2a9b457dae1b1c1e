package allocator

import (
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

// Nothing but a change of the request moves an address.
func TestAssignKeeps(t *testing.T) {
	base := []Pool{pool("a", "198.51.100.0/28", priority(5)), pool("b", "198.51.100.16/28", priority(6))}
	keeps := []struct {
		name   string
		pools  []Pool // the configuration after the first Assign (nil = unchanged)
		second service.Request
	}{
		{"same request", nil, svc("ns/s")},
		{"another pool gets a better priority", []Pool{base[0], pool("b", "198.51.100.16/28", priority(0))}, svc("ns/s")},
		{"the pool stops admitting the namespace", []Pool{pool("a", "198.51.100.0/28", inNamespaces("x")), base[1]}, svc("ns/s")},
		{"the pool turns autoAssign off", []Pool{pool("a", "198.51.100.0/28", manual()), base[1]}, svc("ns/s")},
		{"the pool is being deleted", []Pool{pool("a", "198.51.100.0/28", closed()), base[1]}, svc("ns/s")},
		{"the pool is gone", []Pool{base[1]}, svc("ns/s")},
		{"the pool shrank past the address", []Pool{pool("a", "198.51.100.8/29"), base[1]}, svc("ns/s")},
		{"ports change", nil, svc("ns/s", ports("UDP/53", "TCP/8080"))},
		{"the request now names the pool it has", nil, svc("ns/s", fromPool("a"))},
		{"the request now asks for the address it has", nil, svc("ns/s", ips("198.51.100.0"))},
		{"prefer dual stays single when it got one family", []Pool{pool("a", "198.51.100.0/28", "2001:db8::/120")}, svc("ns/s", preferDual(v4, v6))},
		{"labels change", nil, svc("ns/s", svcLabels("x=y"), nsLabels("a=b"))},
	}
	for _, c := range keeps {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, base...)
			first := mustAssign(t, a, svc("ns/s"))
			if c.pools != nil {
				if err := a.SetPools(c.pools); err != nil {
					t.Fatal(err)
				}
			}
			wantAssignment(t, mustAssign(t, a, c.second), first.Pool, first.IPs[0].String())
		})
	}
}

func TestAssignMoves(t *testing.T) {
	moves := []struct {
		name   string
		second service.Request
		pool   string
		ips    []string
	}{
		{"another requested address", svc("ns/s", ips("198.51.100.9")), "a", []string{"198.51.100.9"}},
		{"another named pool", svc("ns/s", fromPool("b")), "b", []string{"198.51.100.16"}},
		{"another family", svc("ns/s", single6()), "a", []string{"2001:db8::"}},
		{"now dual-stack", svc("ns/s", requireDual(v4, v6)), "a", []string{"198.51.100.0", "2001:db8::"}},
		{"now a sharing key", svc("ns/s", sharing("k")), "a", []string{"198.51.100.0"}},
	}
	for _, c := range moves {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, pool("a", "198.51.100.0/28", "2001:db8::/120"), pool("b", "198.51.100.16/28"))
			mustAssign(t, a, svc("ns/s"))
			wantAssignment(t, mustAssign(t, a, c.second), c.pool, c.ips...)
		})
	}
	t.Run("ports that now clash with a co-holder", func(t *testing.T) {
		a := newAlloc(t, pool("a", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/web", sharing("k")))
		mustAssign(t, a, svc("ns/dns", sharing("k"), ports("UDP/53")))
		wantAssignment(t, mustAssign(t, a, svc("ns/dns", sharing("k"), ports("UDP/53", "TCP/80"))), "a", "198.51.100.1")
		wantAssignment(t, mustAssign(t, a, svc("ns/web", sharing("k"))), "a", "198.51.100.0")
	})
	t.Run("the refreshed ports count for later sharers", func(t *testing.T) {
		a := newAlloc(t, pool("a", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/web", sharing("k")))
		mustAssign(t, a, svc("ns/web", sharing("k"), ports("TCP/443")))
		wantAssignment(t, mustAssign(t, a, svc("ns/other", sharing("k"))), "a", "198.51.100.0")
	})
}

// A bad edit never loses the address.
func TestFailedEditKeepsAddress(t *testing.T) {
	a := newAlloc(t, pool("a", "198.51.100.0/30"), pool("b", "198.51.100.8/30", inNamespaces("x")))
	mustAssign(t, a, svc("ns/s"))
	mustAssign(t, a, svc("ns/t"))
	for _, edit := range []struct {
		req    service.Request
		reason Reason
	}{
		{svc("ns/s", ips("198.51.100.1")), RequestedIPInUse},
		{svc("ns/s", ips("198.51.100.100")), RequestedIPNotInPool},
		{svc("ns/s", fromPool("b")), PoolNotAllowed},
		{svc("ns/s", fromPool("zz")), PoolNotFound},
		{svc("ns/s", single6()), NoPoolMatches},
	} {
		assignFails(t, a, edit.req, edit.reason)
	}
	wantAssignment(t, mustAssign(t, a, svc("ns/s")), "a", "198.51.100.0")
	// A move that can only reuse the Service's own address gets it back.
	wantAssignment(t, mustAssign(t, a, svc("ns/s", sharing("k"))), "a", "198.51.100.0")
}
