package allocator

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// count asks for n addresses per family (herald.dev/address-count).
func count(n int) reqOpt { return func(r *service.Request) { r.AddressCount = n } }

func TestAddressCountAllocates(t *testing.T) {
	cases := []struct {
		name  string
		pools []Pool
		req   service.Request
		pool  string
		want  []string
	}{
		{"absent is one", []Pool{pool("p", "198.51.100.0/28")}, svc("ns/a", count(0)), "p", []string{"198.51.100.0"}},
		{"one", []Pool{pool("p", "198.51.100.0/28")}, svc("ns/a", count(1)), "p", []string{"198.51.100.0"}},
		{"three, ascending", []Pool{pool("p", "198.51.100.0/28")}, svc("ns/a", count(3)),
			"p", []string{"198.51.100.0", "198.51.100.1", "198.51.100.2"}},
		{"the maximum", []Pool{pool("p", "198.51.100.0/28")}, svc("ns/a", count(service.MaxAddressCount)), "p", []string{
			"198.51.100.0", "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4", "198.51.100.5", "198.51.100.6", "198.51.100.7",
			"198.51.100.8", "198.51.100.9", "198.51.100.10", "198.51.100.11", "198.51.100.12", "198.51.100.13", "198.51.100.14", "198.51.100.15"}},
		{"IPv6", []Pool{pool("p", "2001:db8::/120")}, svc("ns/a", single6(), count(2)), "p", []string{"2001:db8::", "2001:db8::1"}},
		{"dual-stack, IPv4 first", []Pool{pool("p", "198.51.100.0/28", "2001:db8::/120")}, svc("ns/a", requireDual(v4, v6), count(2)),
			"p", []string{"198.51.100.0", "198.51.100.1", "2001:db8::", "2001:db8::1"}},
		{"dual-stack, IPv6 first", []Pool{pool("p", "198.51.100.0/28", "2001:db8::/120")}, svc("ns/a", requireDual(v6, v4), count(2)),
			"p", []string{"2001:db8::", "2001:db8::1", "198.51.100.0", "198.51.100.1"}},
		{"prefer dual-stack falls back to the primary family, all of its count",
			[]Pool{pool("p", "198.51.100.0/28", "2001:db8::/127")}, svc("ns/a", preferDual(v4, v6), count(3)),
			"p", []string{"198.51.100.0", "198.51.100.1", "198.51.100.2"}},
		{"across ranges of a pool", []Pool{pool("p", "198.51.100.0/31", "198.51.100.8/31")}, svc("ns/a", count(3)),
			"p", []string{"198.51.100.0", "198.51.100.1", "198.51.100.8"}},
		{"past .255 and .0 with avoidBuggyIPs", []Pool{pool("p", "198.51.100.254-198.51.101.2", avoidBuggy())}, svc("ns/a", count(3)),
			"p", []string{"198.51.100.254", "198.51.101.1", "198.51.101.2"}},
		{"past reserved IPv6 addresses", []Pool{{Name: "p", AutoAssign: true, Ranges: pool("x", "2001:db8::/126").Ranges,
			Reserved: addrs("2001:db8::")}}, svc("ns/a", single6(), count(3)), "p", []string{"2001:db8::1", "2001:db8::2", "2001:db8::3"}},
		{"the next pool when the first has too few", []Pool{pool("a", "198.51.100.0/31", priority(1)), pool("b", "198.51.100.8/29", priority(2))},
			svc("ns/a", count(3)), "b", []string{"198.51.100.8", "198.51.100.9", "198.51.100.10"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, c.pools...)
			wantAssignment(t, mustAssign(t, a, c.req), c.pool, c.want...)
			again := mustAssign(t, a, c.req) // idempotent
			wantAssignment(t, again, c.pool, c.want...)
		})
	}
}

// All of a Service's addresses or none: too few free addresses fail and
// change nothing.
func TestAddressCountAllOrNone(t *testing.T) {
	cases := []struct {
		name  string
		pools []Pool
		req   service.Request
		says  []string
	}{
		{"too few", []Pool{pool("p", "198.51.100.0/31")}, svc("ns/a", count(3)),
			[]string{"pool p has fewer than 3 free IPv4 addresses", "asks for 3 per family", "herald.dev/address-count"}},
		{"one family short in RequireDualStack", []Pool{pool("p", "198.51.100.0/28", "2001:db8::/127")}, svc("ns/a", requireDual(v4, v6), count(3)),
			[]string{"fewer than 3 free IPv6 addresses"}},
		{"every pool short", []Pool{pool("a", "198.51.100.0/31"), pool("b", "198.51.100.8/31")}, svc("ns/a", count(3)),
			[]string{"pool a has fewer than 3", "pool b has fewer than 3"}},
		{"a named pool short", []Pool{pool("a", "198.51.100.0/31"), pool("b", "198.51.100.8/29")}, svc("ns/a", count(3), fromPool("a")),
			[]string{"pool a has fewer than 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, c.pools...)
			assignFails(t, a, c.req, PoolExhausted, c.says...)
			if _, held := a.Lookup(c.req.Key); held {
				t.Errorf("%s holds addresses after a failed Assign", c.req.Key)
			}
			for _, p := range c.pools {
				if u := a.Usage(p.Name); u.IPv4.Assigned != 0 || u.IPv6.Assigned != 0 {
					t.Errorf("pool %s counts %+v after a failed Assign", p.Name, u)
				}
			}
		})
	}
}

func TestAddressCountInvalid(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	cases := map[string]struct {
		req  service.Request
		says string
	}{
		"above the maximum": {svc("ns/s", count(service.MaxAddressCount+1)), "allows 1 to 16"},
		"negative":          {svc("ns/s", count(-1)), "asks for -1 addresses"},
		"fewer requested":   {svc("ns/s", count(2), ips("198.51.100.1")), "asks for 2 addresses per family (herald.dev/address-count) but requests 1 IPv4 address"},
		"more requested":    {svc("ns/s", count(2), ips("198.51.100.1", "198.51.100.2", "198.51.100.3")), "requests 3 IPv4 addresses"},
		"two without count": {svc("ns/s", ips("198.51.100.1", "198.51.100.2")), "unless herald.dev/address-count asks for 2"},
		"uneven families": {svc("ns/s", requireDual(v4, v6), count(2), ips("198.51.100.1", "198.51.100.2", "2001:db8::1")),
			"requests 1 IPv6 address (2001:db8::1)"},
		"one family with RequireDualStack": {svc("ns/s", requireDual(v4, v6), count(2), ips("198.51.100.1", "198.51.100.2")),
			"RequireDualStack but requests only 198.51.100.1 and 198.51.100.2"},
		"the same address twice": {svc("ns/s", count(2), ips("198.51.100.1", "198.51.100.1")), "198.51.100.1 twice"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assignFails(t, a, c.req, InvalidRequest, c.says)
		})
	}
}

func TestAddressCountRequested(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	// Any order in the annotation; ascending per family in the answer.
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v6, v4), count(2),
		ips("198.51.100.9", "2001:db8::7", "198.51.100.3", "2001:db8::2"))),
		"p", "2001:db8::2", "2001:db8::7", "198.51.100.3", "198.51.100.9")
	// PreferDualStack requesting one family gets that family.
	wantAssignment(t, mustAssign(t, a, svc("ns/b", preferDual(v4, v6), count(2), ips("198.51.100.5", "198.51.100.4"))),
		"p", "198.51.100.4", "198.51.100.5")
	// One of them taken: nothing is assigned.
	assignFails(t, a, svc("ns/c", count(2), ips("198.51.100.4", "198.51.100.6")), RequestedIPInUse, "198.51.100.4 is held by Service ns/b")
	if _, held := a.Lookup("ns/c"); held {
		t.Error("ns/c holds addresses after a failed Assign")
	}
}

// Changing the count keeps what stays: more adds the lowest free
// addresses, fewer releases the highest.
func TestAddressCountChanges(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	mustAssign(t, a, svc("ns/x"))                      // .0
	mustAssign(t, a, svc("ns/a", requireDual(v4, v6))) // .1, ::
	mustAssign(t, a, svc("ns/y"))                      // .2
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v4, v6), count(3))),
		"p", "198.51.100.1", "198.51.100.3", "198.51.100.4", "2001:db8::", "2001:db8::1", "2001:db8::2")
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v4, v6), count(2))),
		"p", "198.51.100.1", "198.51.100.3", "2001:db8::", "2001:db8::1")
	if u := a.Usage("p"); u.IPv4.Assigned != 4 || u.IPv6.Assigned != 2 || u.IPv4.Available != 12 || a.Holders("p") != 3 {
		t.Errorf("usage %+v, holders %d", u, a.Holders("p"))
	}
	// The released address is the next one handed out.
	wantAssignment(t, mustAssign(t, a, svc("ns/z")), "p", "198.51.100.4")
	// Down to one per family, back to the Service's first addresses.
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v4, v6))), "p", "198.51.100.1", "2001:db8::")
	// A family added gets the count, the other family grows.
	wantAssignment(t, mustAssign(t, a, svc("ns/b", count(2))), "p", "198.51.100.3", "198.51.100.5")
	wantAssignment(t, mustAssign(t, a, svc("ns/b", requireDual(v4, v6), count(3))),
		"p", "198.51.100.3", "198.51.100.5", "198.51.100.6", "2001:db8::1", "2001:db8::2", "2001:db8::3")
	// Growth the pool cannot give fails and keeps what is held.
	small := newAlloc(t, pool("p", "198.51.100.0/30"))
	mustAssign(t, small, svc("ns/a", count(2)))
	mustAssign(t, small, svc("ns/b", count(2)))
	assignFails(t, small, svc("ns/a", count(3)), PoolExhausted, "fewer than 3 free IPv4 addresses")
	// Growth its pool cannot give moves the Service to a pool that can,
	// all of its addresses.
	grow := newAlloc(t, pool("a", "198.51.100.0/30", priority(1)), pool("b", "198.51.100.8/29", priority(2)))
	mustAssign(t, grow, svc("ns/a", count(2)))
	mustAssign(t, grow, svc("ns/b", count(2)))
	wantAssignment(t, mustAssign(t, grow, svc("ns/a", count(3))), "b", "198.51.100.8", "198.51.100.9", "198.51.100.10")
	// A Service that moves takes the lowest free addresses, in its count.
	two := newAlloc(t, pool("a", "198.51.100.0/29"), pool("b", "198.51.100.8/29"))
	mustAssign(t, two, svc("ns/a", count(2)))
	wantAssignment(t, mustAssign(t, two, svc("ns/a", count(3), fromPool("b"))), "b", "198.51.100.8", "198.51.100.9", "198.51.100.10")
}

// Services sharing addresses under one key ask for the same count and
// share all of them.
func TestAddressCountSharing(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	web := svc("ns/web", sharing("k"), count(3), ports("TCP/80"))
	wantAssignment(t, mustAssign(t, a, web), "p", "198.51.100.0", "198.51.100.1", "198.51.100.2")
	tls := mustAssign(t, a, svc("ns/tls", sharing("k"), count(3), ports("TCP/443")))
	wantAssignment(t, tls, "p", "198.51.100.0", "198.51.100.1", "198.51.100.2")
	// Another count does not join: it gets addresses of its own, and is told why.
	two := mustAssign(t, a, svc("ns/two", sharing("k"), count(2), ports("TCP/8080")))
	wantAssignment(t, two, "p", "198.51.100.3", "198.51.100.4")
	if !strings.Contains(two.Refused, "different numbers of addresses per family (3 and 2") {
		t.Errorf("Refused = %q", two.Refused)
	}
	// Requesting all of them joins; some of them, or with another count, does not.
	wantAssignment(t, mustAssign(t, a, svc("ns/dns", sharing("k"), count(3), ports("UDP/53"),
		ips("198.51.100.2", "198.51.100.1", "198.51.100.0"))), "p", "198.51.100.0", "198.51.100.1", "198.51.100.2")
	assignFails(t, a, svc("ns/part", sharing("k"), count(3), ports("TCP/22"), ips("198.51.100.0", "198.51.100.1", "198.51.100.9")),
		IncompatibleSharing, "holds 198.51.100.0 and 198.51.100.1 and 198.51.100.2", "share all of them")
	assignFails(t, a, svc("ns/one", sharing("k"), ports("TCP/22"), ips("198.51.100.0")),
		IncompatibleSharing, "different numbers of addresses per family (3 and 1")
	// A sharing Service that changes its count leaves the shared
	// addresses (the others keep them) and, with the new count, joins
	// the Services of that count.
	wantAssignment(t, mustAssign(t, a, svc("ns/tls", sharing("k"), count(2), ports("TCP/443"))), "p", "198.51.100.3", "198.51.100.4")
	if got, _ := a.Lookup("ns/web"); len(got.IPs) != 3 || got.IPs[0].String() != "198.51.100.0" {
		t.Errorf("ns/web moved: %v", got)
	}
	// A dual-stack Service joins per family.
	d1 := mustAssign(t, a, svc("ns/d1", sharing("d"), count(2), requireDual(v4, v6), ports("TCP/80")))
	d2 := mustAssign(t, a, svc("ns/d2", sharing("d"), count(2), requireDual(v6, v4), ports("TCP/443")))
	wantAssignment(t, d1, "p", "198.51.100.5", "198.51.100.6", "2001:db8::", "2001:db8::1")
	wantAssignment(t, d2, "p", "2001:db8::", "2001:db8::1", "198.51.100.5", "198.51.100.6")
	if u := a.Usage("p"); u.IPv4.Assigned != 7 || u.IPv6.Assigned != 2 {
		t.Errorf("usage %+v: a shared address counts once", u)
	}
}

// A Service joins one whole group of shared addresses even when two
// groups it may join interleave.
func TestAddressCountSharingInterleaved(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28"))
	mustAssign(t, a, svc("ns/gap1", ips("198.51.100.1")))
	mustAssign(t, a, svc("ns/gap2", ips("198.51.100.3")))
	wantAssignment(t, mustAssign(t, a, svc("ns/g1", sharing("k"), count(3), ports("TCP/80"))), "p", "198.51.100.0", "198.51.100.2", "198.51.100.4")
	a.Release("ns/gap1")
	a.Release("ns/gap2")
	mustAssign(t, a, svc("ns/g2", sharing("k"), count(3), ports("TCP/80"), ips("198.51.100.1", "198.51.100.3", "198.51.100.5")))
	wantAssignment(t, mustAssign(t, a, svc("ns/j", sharing("k"), count(3), ports("TCP/443"))), "p", "198.51.100.0", "198.51.100.2", "198.51.100.4")
}

// What a Service holds comes from its status: Restore takes several
// addresses of a family whatever the annotation says now, and the next
// Assign brings it to the request's count.
func TestAddressCountRestore(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	held := addrs("2001:db8::5", "198.51.100.7", "198.51.100.2", "2001:db8::1")
	if err := a.Restore(svc("ns/a", requireDual(v4, v6)), "p", held); err != nil {
		t.Fatal(err)
	}
	checkBook(t, a)
	got, _ := a.Lookup("ns/a")
	wantAssignment(t, got, "p", "198.51.100.2", "198.51.100.7", "2001:db8::1", "2001:db8::5")
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v4, v6), count(2))), "p", "198.51.100.2", "198.51.100.7", "2001:db8::1", "2001:db8::5")
	// A restart restores the same: the restored holder equals what Assign made.
	b := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
	if err := b.Restore(svc("ns/a", requireDual(v4, v6), count(2)), "p", got.IPs); err != nil {
		t.Fatal(err)
	}
	// A restored holder shares by what it holds.
	mustAssign(t, b, svc("ns/s", sharing("k"), count(2), ports("TCP/80")))
	c := newAlloc(t, pool("p", "198.51.100.0/28"))
	if err := c.Restore(svc("ns/s", sharing("k"), ports("TCP/80")), "p", addrs("198.51.100.0", "198.51.100.1")); err != nil {
		t.Fatal(err)
	}
	wantAssignment(t, mustAssign(t, c, svc("ns/t", sharing("k"), count(2), ports("TCP/443"))), "p", "198.51.100.0", "198.51.100.1")
	wantFail(t, c.Restore(svc("ns/u", sharing("k"), count(2), ports("TCP/22")), "p", addrs("198.51.100.0")), IncompatibleSharing, "(2 and 1")
	// The annotation removed while the controller was down: one address,
	// the lowest, stays.
	wantAssignment(t, mustAssign(t, a, svc("ns/a", requireDual(v4, v6))), "p", "198.51.100.2", "2001:db8::1")
	too := addrs("2001:db8::80")
	for len(too) <= service.MaxAddressCount {
		too = append(too, too[len(too)-1].Next())
	}
	wantFail(t, a.Restore(svc("ns/big", single6()), "p", too), InvalidRequest, "17 IPv6 addresses in its status")
}

// Restore refuses a status that shares only part of another Service's
// addresses of a family (an edit can make one): the older Service keeps
// them, the younger asks Assign, and the group stays whole.
func TestAddressCountRestoreRefusesPartOfAGroup(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28"))
	if err := a.Restore(svc("ns/a", sharing("k"), count(2), ports("TCP/80")), "p", addrs("198.51.100.0", "198.51.100.1")); err != nil {
		t.Fatal(err)
	}
	wantFail(t, a.Restore(svc("ns/b", sharing("k"), count(2), ports("TCP/443")), "p", addrs("198.51.100.1", "198.51.100.2")),
		IncompatibleSharing, "Service ns/b holds 198.51.100.1 and 198.51.100.2", "share all of them")
	if _, ok := a.Lookup("ns/b"); ok {
		t.Error("ns/b holds addresses after a failed Restore")
	}
	checkBook(t, a)
	if err := a.Restore(svc("ns/b", sharing("k"), count(2), ports("TCP/443")), "p", addrs("198.51.100.1", "198.51.100.0")); err != nil {
		t.Errorf("the whole group: %v", err)
	}
}

// A Service told to yield (an earlier holder's change made it clash)
// stays so when its move fails: a failed Assign or Restore changes
// nothing.
func TestFailedMoveKeepsYielding(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/30"))
	mustAssign(t, a, svc("ns/a", sharing("k"), count(2), ports("TCP/80")))
	mustAssign(t, a, svc("ns/b", sharing("k"), count(2), ports("TCP/443")))
	if got := mustAssign(t, a, svc("ns/a", sharing("k"), count(2), ports("TCP/443"))); !slices.Equal(got.Displaced, []string{"ns/b"}) {
		t.Fatalf("Displaced = %v", got.Displaced)
	}
	assignFails(t, a, svc("ns/b", sharing("k"), count(3), ports("TCP/443")), PoolExhausted)
	if !a.book.yielding["ns/b"] {
		t.Error("ns/b no longer yields after a failed Assign")
	}
	checkBook(t, a)
	wantFail(t, a.Restore(svc("ns/b", sharing("k"), count(2), ports("TCP/443")), "p", addrs("198.51.100.0", "198.51.100.3")), IncompatibleSharing)
	if !a.book.yielding["ns/b"] {
		t.Error("ns/b no longer yields after a failed Restore")
	}
	checkBook(t, a)
}

// MetalLB refuses several addresses of one family in its loadBalancerIPs
// annotation, and Herald reads that annotation after a takeover: what it
// answers names the count that would make the request valid.
func TestMetalLBAnnotationWithSeveralAddressesOfAFamily(t *testing.T) {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			service.LegacyMetalLBLoadBalancerIPs: "198.51.100.2,198.51.100.1"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{v4}},
	}
	req, err := service.Annotations{}.Request(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := newAlloc(t, pool("p", "198.51.100.0/28"))
	assignFails(t, a, req, InvalidRequest, "requests 2 IPv4 addresses (198.51.100.1 and 198.51.100.2)", "unless herald.dev/address-count asks for 2")
	s.Annotations[v1beta1.AnnotationAddressCount] = "2"
	if req, err = (service.Annotations{}).Request(s, nil); err != nil {
		t.Fatal(err)
	}
	wantAssignment(t, mustAssign(t, a, req), "p", "198.51.100.1", "198.51.100.2")
}
