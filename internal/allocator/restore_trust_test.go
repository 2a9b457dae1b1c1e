package allocator

import (
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

// TestRestoreNeverTrustsTheRecordedPool: the pool named at restore comes
// from an annotation the Service's owner can edit; the pool containing
// the addresses wins, and the name counts only for addresses no pool
// contains.
func TestRestoreNeverTrustsTheRecordedPool(t *testing.T) {
	pools := func() *Allocator {
		return newAlloc(t, pool("l2", "198.51.100.0/28", "2001:db8:1::/120"), pool("bgp", "198.51.100.128/28", "2001:db8:2::/120"))
	}
	cases := []struct {
		name, named string
		req         service.Request
		ips         []string
		want        string
	}{
		{"named pool does not contain it", "bgp", svc("ns/s"), []string{"198.51.100.3"}, "l2"},
		{"named pool does not exist", "nope", svc("ns/s"), []string{"198.51.100.3"}, "l2"},
		{"no pool named", "", svc("ns/s"), []string{"198.51.100.3"}, "l2"},
		{"requests another pool", "bgp", svc("ns/s", fromPool("bgp")), []string{"198.51.100.3"}, "l2"},
		{"dual-stack, named pool holds neither", "bgp", svc("ns/s", requireDual(v4, v6)), []string{"198.51.100.3", "2001:db8:1::3"}, "l2"},
		{"dual-stack, one address outside every pool", "bgp", svc("ns/s", requireDual(v4, v6)), []string{"198.51.100.3", "2001:db8:9::3"}, "l2"},
		{"outside every pool: the record stands", "bgp", svc("ns/s"), []string{"198.51.100.77"}, "bgp"},
		{"outside every pool, none recorded", "", svc("ns/s"), []string{"198.51.100.77"}, ""},
		{"one outside, the other in the named pool", "l2", svc("ns/s", requireDual(v4, v6)), []string{"198.51.100.3", "2001:db8:9::3"}, "l2"},
		{"split between pools: the first address's", "bgp", svc("ns/s", requireDual(v4, v6)), []string{"198.51.100.3", "2001:db8:2::3"}, "l2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := pools()
			if err := a.Restore(c.req, c.named, addrs(c.ips...)); err != nil {
				t.Fatal(err)
			}
			checkBook(t, a)
			got, _ := a.Lookup("ns/s")
			wantAssignment(t, got, c.want, c.ips...)
			if c.want != "" && a.Holders(c.want) != 1 {
				t.Errorf("holders of %s: %d", c.want, a.Holders(c.want))
			}
			if c.want != c.named && c.named != "" && a.Holders(c.named) != 0 {
				t.Errorf("the recorded pool %s counts a holder", c.named)
			}
		})
	}
}

// TestRestoredLieKeepsTheAddress: a Service that requests no pool, whose
// record names the wrong pool, keeps its address and pool on its next
// Assign, and the wrong pool's counts never include it.
func TestRestoredLieKeepsTheAddress(t *testing.T) {
	a := newAlloc(t, pool("l2", "198.51.100.0/28"), pool("bgp", "198.51.100.128/28"))
	if err := a.Restore(svc("ns/s"), "bgp", addrs("198.51.100.5")); err != nil {
		t.Fatal(err)
	}
	wantAssignment(t, mustAssign(t, a, svc("ns/s")), "l2", "198.51.100.5")
	if u := a.Usage("bgp"); u.IPv4.Assigned != 0 || u.OutsideRanges != 0 {
		t.Errorf("usage of bgp %+v", u)
	}
	if u := a.Usage("l2"); u.IPv4.Assigned != 1 || u.OutsideRanges != 0 {
		t.Errorf("usage of l2 %+v", u)
	}
	// another Service restored with the true pool shares nothing it may not
	wantFail(t, a.Restore(svc("ns/t"), "l2", addrs("198.51.100.5")), RequestedIPInUse, "held by Service ns/s")
}
