package allocator

import "testing"

func TestRestore(t *testing.T) {
	t.Run("outside every pool", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/30"))
		if err := a.Restore(svc("ns/s"), "old", addrs("198.51.100.77")); err != nil {
			t.Fatal(err)
		}
		checkBook(t, a)
		got, _ := a.Lookup("ns/s")
		wantAssignment(t, got, "old", "198.51.100.77")
		if u := a.Usage("old"); u.OutsideRanges != 1 || a.Holders("old") != 1 {
			t.Errorf("usage of old %+v, holders %d", u, a.Holders("old"))
		}
		wantAssignment(t, mustAssign(t, a, svc("ns/s")), "old", "198.51.100.77")
		assignFails(t, a, svc("ns/t", ips("198.51.100.77")), RequestedIPNotInPool)
	})
	t.Run("in a pool, then assigned around", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/30"))
		if err := a.Restore(svc("ns/s"), "p", addrs("198.51.100.1")); err != nil {
			t.Fatal(err)
		}
		wantAssignment(t, mustAssign(t, a, svc("ns/t")), "p", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/u")), "p", "198.51.100.2")
	})
	t.Run("pool inferred when not given", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/30", "2001:db8::/120"))
		if err := a.Restore(svc("ns/s", requireDual(v4, v6)), "", addrs("2001:db8::5", "198.51.100.1")); err != nil {
			t.Fatal(err)
		}
		got, _ := a.Lookup("ns/s")
		wantAssignment(t, got, "p", "198.51.100.1", "2001:db8::5")
	})
	t.Run("conflicts", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		if err := a.Restore(svc("ns/old", sharing("k")), "p", addrs("198.51.100.3")); err != nil {
			t.Fatal(err)
		}
		wantFail(t, a.Restore(svc("ns/young"), "p", addrs("198.51.100.3")), RequestedIPInUse, "ns/young", "held by Service ns/old")
		wantFail(t, a.Restore(svc("ns/young", sharing("k")), "p", addrs("198.51.100.3")), IncompatibleSharing, "both use TCP/80")
		// the pool named counts only outside every pool: a held orphan
		// is not shared across pools
		if err := a.Restore(svc("ns/orphan", sharing("k")), "old", addrs("198.51.100.99")); err != nil {
			t.Fatal(err)
		}
		wantFail(t, a.Restore(svc("ns/young", sharing("k"), ports("UDP/53")), "q", addrs("198.51.100.99")), RequestedIPInUse, "from address pool old, not from address pool q")
		checkBook(t, a)
		if err := a.Restore(svc("ns/young", sharing("k"), ports("UDP/53")), "p", addrs("198.51.100.3")); err != nil {
			t.Fatalf("compatible sharer: %v", err)
		}
		checkBook(t, a)
	})
	t.Run("a failed restore keeps the old assignment", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/a"))
		mustAssign(t, a, svc("ns/b"))
		wantFail(t, a.Restore(svc("ns/b"), "p", addrs("198.51.100.0")), RequestedIPInUse)
		got, _ := a.Lookup("ns/b")
		wantAssignment(t, got, "p", "198.51.100.1")
		checkBook(t, a)
	})
	t.Run("the same addresses with clashing ports", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		if err := a.Restore(svc("ns/a", sharing("k")), "p", addrs("198.51.100.3")); err != nil {
			t.Fatal(err)
		}
		if err := a.Restore(svc("ns/b", sharing("k"), ports("UDP/53")), "p", addrs("198.51.100.3")); err != nil {
			t.Fatal(err)
		}
		wantFail(t, a.Restore(svc("ns/b", sharing("k")), "p", addrs("198.51.100.3")), IncompatibleSharing, "both use TCP/80")
		checkBook(t, a)
		got, _ := a.Lookup("ns/b")
		wantAssignment(t, got, "p", "198.51.100.3")
	})
	t.Run("idempotent", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		for range 2 {
			if err := a.Restore(svc("ns/a"), "p", addrs("198.51.100.4")); err != nil {
				t.Fatal(err)
			}
		}
		if u := a.Usage("p"); u.IPv4.Assigned != 1 || a.Holders("p") != 1 {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		wantFail(t, a.Restore(svc("ns/a"), "p", nil), InvalidRequest, "nothing to restore")
		wantFail(t, a.Restore(svc("ns/a"), "p", addrs("2001:db8::1")), InvalidRequest, "ipFamilies")
		wantFail(t, a.Restore(svc("ns/a", preferDual(v4, v6)), "p", addrs("198.51.100.1", "198.51.100.1")), InvalidRequest, "198.51.100.1 twice")
		wantFail(t, a.Restore(svc(""), "p", addrs("198.51.100.1")), InvalidRequest)
	})
}
