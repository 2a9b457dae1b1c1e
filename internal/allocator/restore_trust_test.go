package allocator

import (
	"fmt"
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
		{"outside every pool, recorded by none: no pool", "bgp", svc("ns/s"), []string{"198.51.100.77"}, ""},
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

func heldOutside(ips ...string) poolOpt {
	return func(p *Pool) { p.HeldOutside = addrs(ips...) }
}

func unrecorded() poolOpt { return func(p *Pool) { p.OutsideUnrecorded = true } }

// TestRestoreOutsideFollowsThePoolsRecord: an address no pool's ranges
// contain goes back to the pool whose status records it as held outside
// its ranges, whatever the annotation names; the annotation counts only
// when the pool it names has no record at all (upgrade).
func TestRestoreOutsideFollowsThePoolsRecord(t *testing.T) {
	cases := []struct {
		name   string
		pools  []Pool
		named  string
		ips    []string
		want   string
		holder bool
	}{
		{"recorded by l2, annotation names bgp", []Pool{pool("l2", "198.51.100.0/28", heldOutside("198.51.100.77")), pool("bgp", "198.51.100.128/28")},
			"bgp", []string{"198.51.100.77"}, "l2", true},
		{"recorded by l2, no annotation", []Pool{pool("l2", "198.51.100.0/28", heldOutside("198.51.100.77")), pool("bgp", "198.51.100.128/28")},
			"", []string{"198.51.100.77"}, "l2", true},
		{"dual-stack, the IPv6 address recorded", []Pool{pool("l2", "198.51.100.0/28", heldOutside("198.51.100.77", "2001:db8:9::3")), pool("bgp", "198.51.100.128/28")},
			"bgp", []string{"198.51.100.78", "2001:db8:9::3"}, "l2", true},
		{"recorded nowhere, named pool has a record", []Pool{pool("l2", "198.51.100.0/28", heldOutside("198.51.100.76")), pool("bgp", "198.51.100.128/28")},
			"bgp", []string{"198.51.100.77"}, "", false},
		{"recorded nowhere, named pool unrecorded (upgrade)", []Pool{pool("l2", "198.51.100.0/28"), pool("bgp", "198.51.100.128/28", unrecorded())},
			"bgp", []string{"198.51.100.77"}, "bgp", true},
		{"recorded by l2 beats an unrecorded named pool", []Pool{pool("l2", "198.51.100.0/28", heldOutside("198.51.100.77")), pool("bgp", "198.51.100.128/28", unrecorded())},
			"bgp", []string{"198.51.100.77"}, "l2", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, c.pools...)
			req := svc("ns/s")
			if len(c.ips) == 2 {
				req = svc("ns/s", requireDual(v4, v6))
			}
			if err := a.Restore(req, c.named, addrs(c.ips...)); err != nil {
				t.Fatal(err)
			}
			checkBook(t, a)
			got, _ := a.Lookup("ns/s")
			wantAssignment(t, got, c.want, c.ips...)
			if c.holder {
				if u := a.Usage(c.want); u.OutsideRanges != uint64(len(c.ips)) {
					t.Errorf("usage of %s: %+v", c.want, u)
				}
				if out := a.OutsideRanges(c.want); len(out) != len(c.ips) {
					t.Errorf("outside addresses of %s: %v", c.want, out)
				}
			}
			if c.named != c.want && c.named != "" && a.Holders(c.named) != 0 {
				t.Errorf("the annotation's pool %s counts a holder", c.named)
			}
		})
	}
}

// TestOutsideRangesFollowsTheBook: the outside addresses a pool reports
// appear when its ranges shrink under a holder, sorted, and go when the
// holder releases them or the ranges grow back.
func TestOutsideRangesFollowsTheBook(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28"))
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		mustAssign(t, a, svc(k))
	}
	if err := a.SetPools([]Pool{pool("p", "198.51.100.0/32")}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(a.OutsideRanges("p")); got != "[198.51.100.1 198.51.100.2]" {
		t.Fatalf("outside after shrinking: %s", got)
	}
	a.Release("ns/b")
	checkBook(t, a)
	if got := fmt.Sprint(a.OutsideRanges("p")); got != "[198.51.100.2]" {
		t.Fatalf("outside after a release: %s", got)
	}
	if err := a.SetPools([]Pool{pool("p", "198.51.100.0/28")}); err != nil {
		t.Fatal(err)
	}
	if got := a.OutsideRanges("p"); len(got) != 0 {
		t.Fatalf("outside after growing back: %v", got)
	}
	checkBook(t, a)
}
