package allocator

import "testing"

func reserved(as ...string) poolOpt {
	return func(p *Pool) { p.Reserved = append(p.Reserved, addrs(as...)...) }
}

// TestReservedAddressesAreSkipped: an IPv6 CIDR's all-zeros address (the
// subnet-router anycast address) is handed out only on request, and
// counts as neither available nor occupied.
func TestReservedAddressesAreSkipped(t *testing.T) {
	a := newAlloc(t, pool("p", "2001:db8:ff00::/126", "198.51.100.0/30", reserved("2001:db8:ff00::", "2001:db8:9::")))
	if u := a.Usage("p"); u.IPv6.Available != 3 || u.IPv4.Available != 4 {
		t.Fatalf("usage %+v, want 3 IPv6 available (4 less the reserved one; the one outside the pool counts for nothing)", u)
	}
	for i, want := range []string{"2001:db8:ff00::1", "2001:db8:ff00::2", "2001:db8:ff00::3"} {
		wantAssignment(t, mustAssign(t, a, svc("ns/s"+string(rune('a'+i)), single6())), "p", want)
	}
	assignFails(t, a, svc("ns/full", single6()), PoolExhausted)
	if u := a.Usage("p"); u.IPv6.Available != 0 || u.IPv6.Assigned != 3 {
		t.Errorf("usage %+v", u)
	}
	wantAssignment(t, mustAssign(t, a, svc("ns/asks", single6(), ips("2001:db8:ff00::"))), "p", "2001:db8:ff00::")
	if u := a.Usage("p"); u.IPv6.Available != 0 || u.IPv6.Assigned != 4 {
		t.Errorf("usage after the reserved address was requested %+v", u)
	}
	a.Release("ns/asks")
	a.Release("ns/sb")
	wantAssignment(t, mustAssign(t, a, svc("ns/next", single6())), "p", "2001:db8:ff00::2")
	checkBook(t, a)
}

// TestReservedInTheMiddleOfAMergedRange: two CIDRs written side by side
// merge into one range; the second's all-zeros address is skipped there.
func TestReservedInTheMiddleOfAMergedRange(t *testing.T) {
	a := newAlloc(t, pool("p", "2001:db8::/127", "2001:db8::2/127", reserved("2001:db8::2")))
	for _, want := range []string{"2001:db8::", "2001:db8::1", "2001:db8::3"} {
		wantAssignment(t, mustAssign(t, a, svc("ns/"+want, single6())), "p", want)
	}
	if u := a.Usage("p"); u.IPv6.Available != 0 {
		t.Errorf("usage %+v", u)
	}
}
