package allocator

import "testing"

// A changed request keeps each address it still allows.
func TestAssignKeepsWhatTheChangedRequestAllows(t *testing.T) {
	dualPool := pool("a", "198.51.100.0/28", "2001:db8::/120")
	t.Run("SingleStack to RequireDualStack keeps the IPv4", func(t *testing.T) {
		a := newAlloc(t, dualPool)
		mustAssign(t, a, svc("ns/other"))
		mustAssign(t, a, svc("ns/s")) // 198.51.100.1
		a.Release("ns/other")         // .0 is free: a move would take it
		wantAssignment(t, mustAssign(t, a, svc("ns/s", requireDual(v4, v6))), "a", "198.51.100.1", "2001:db8::")
	})
	t.Run("RequireDualStack to SingleStack keeps the primary", func(t *testing.T) {
		a := newAlloc(t, dualPool)
		mustAssign(t, a, svc("ns/other"))
		mustAssign(t, a, svc("ns/s", requireDual(v4, v6)))
		a.Release("ns/other")
		wantAssignment(t, mustAssign(t, a, svc("ns/s")), "a", "198.51.100.1")
	})
	t.Run("adding a sharing key keeps an address held alone", func(t *testing.T) {
		a := newAlloc(t, dualPool)
		mustAssign(t, a, svc("ns/sharer", sharing("k"), ports("TCP/53"))) // .0 under key k
		mustAssign(t, a, svc("ns/s"))                                     // .1
		wantAssignment(t, mustAssign(t, a, svc("ns/s", sharing("k"))), "a", "198.51.100.1")
	})
	t.Run("a new family must come from the same pool", func(t *testing.T) {
		a := newAlloc(t, pool("a", "198.51.100.0/28"), pool("b", "198.51.100.16/28", "2001:db8::/120"))
		mustAssign(t, a, svc("ns/s"))
		wantAssignment(t, mustAssign(t, a, svc("ns/s", requireDual(v4, v6))), "b", "198.51.100.16", "2001:db8::")
	})
}

func TestQuarantine(t *testing.T) {
	a := newAlloc(t, pool("a", "198.51.100.0/30"))
	first := mustAssign(t, a, svc("ns/s"))
	a.Release("ns/s")
	a.Quarantine(first.IPs)
	if !a.Quarantined(first.IPs[0]) {
		t.Fatal("not quarantined")
	}
	wantAssignment(t, mustAssign(t, a, svc("ns/t")), "a", "198.51.100.1")
	assignFails(t, a, svc("ns/u", ips("198.51.100.0")), RequestedIPInUse, "released moments ago")
	// A held address is not quarantined.
	a.Quarantine(addrs("198.51.100.1"))
	if a.Quarantined(addrs("198.51.100.1")[0]) {
		t.Error("a held address was quarantined")
	}
	a.Unquarantine(first.IPs)
	wantAssignment(t, mustAssign(t, a, svc("ns/u", ips("198.51.100.0"))), "a", "198.51.100.0")
	if msg := bookProblem(a); msg != "" {
		t.Fatal(msg)
	}
	a.Release("ns/u")
	a.Quarantine(first.IPs)
	a.Unquarantine(first.IPs)
	wantAssignment(t, mustAssign(t, a, svc("ns/v")), "a", "198.51.100.0")
	if msg := bookProblem(a); msg != "" {
		t.Fatal(msg)
	}
}
