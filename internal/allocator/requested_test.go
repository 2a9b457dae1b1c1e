package allocator

import (
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

func TestRequestedIPs(t *testing.T) {
	pools := func() []Pool {
		return []Pool{
			pool("a", "198.51.100.0/28", "2001:db8::/120"),
			pool("b", "198.51.100.16/28", "2001:db8:1::/120", manual()),
			pool("red", "198.51.100.32/28", inNamespaces("red")),
			pool("gone", "198.51.100.48/28", closed()),
			pool("buggy", "198.51.100.255-198.51.101.0", avoidBuggy()),
		}
	}
	ok := []struct {
		name string
		req  service.Request
		pool string
		ips  []string
	}{
		{"one address", svc("ns/s", ips("198.51.100.5")), "a", []string{"198.51.100.5"}},
		{"from an autoAssign-off pool", svc("ns/s", ips("198.51.100.17")), "b", []string{"198.51.100.17"}},
		{"dual, given secondary first", svc("ns/s", requireDual(v4, v6), ips("2001:db8::7", "198.51.100.7")), "a", []string{"198.51.100.7", "2001:db8::7"}},
		{"prefer dual with one requested gets just it", svc("ns/s", preferDual(v4, v6), ips("198.51.100.9")), "a", []string{"198.51.100.9"}},
		{"named pool that holds it", svc("ns/s", fromPool("b"), ips("198.51.100.18")), "b", []string{"198.51.100.18"}},
		{"a .0 requested from an avoidBuggyIPs pool", svc("ns/s", ips("198.51.101.0")), "buggy", []string{"198.51.101.0"}},
		{"namespace admitted", svc("red/s", ips("198.51.100.33")), "red", []string{"198.51.100.33"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			wantAssignment(t, mustAssign(t, newAlloc(t, pools()...), c.req), c.pool, c.ips...)
		})
	}
	bad := []struct {
		name   string
		req    service.Request
		reason Reason
		says   []string
	}{
		{"in no pool", svc("ns/s", ips("198.51.100.200")), RequestedIPNotInPool, []string{"198.51.100.200", "in no address pool"}},
		{"not in the named pool", svc("ns/s", fromPool("b"), ips("198.51.100.5")), RequestedIPNotInPool, []string{"not in address pool b", "it is in pool a"}},
		{"named pool missing", svc("ns/s", fromPool("zz"), ips("198.51.100.5")), PoolNotFound, []string{"zz"}},
		{"split across pools", svc("ns/s", requireDual(v4, v6), ips("198.51.100.5", "2001:db8:1::5")), RequestedIPNotInPool, []string{"no single address pool", "198.51.100.5 (it is in pool a)", "2001:db8:1::5 (it is in pool b)"}},
		{"namespace not admitted", svc("ns/s", ips("198.51.100.33")), RequestedIPNotAllowed, []string{"pool red", "namespace ns is not in its namespaces"}},
		{"named pool does not admit", svc("ns/s", fromPool("red"), ips("198.51.100.33")), RequestedIPNotAllowed, []string{"pool red"}},
		{"pool being deleted", svc("ns/s", ips("198.51.100.49")), RequestedIPNotAllowed, []string{"gone", "being deleted"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			assignFails(t, newAlloc(t, pools()...), c.req, c.reason, c.says...)
		})
	}
}

func TestRequestedIPHeld(t *testing.T) {
	cases := []struct {
		name     string
		holder   service.Request
		asker    service.Request
		reason   Reason // "" = they share
		fragment string
	}{
		{"held, no sharing", svc("ns/a", ips("198.51.100.5")), svc("ns/b", ips("198.51.100.5")), RequestedIPInUse, "held by Service ns/a"},
		{"held, only the asker shares", svc("ns/a", ips("198.51.100.5")), svc("ns/b", sharing("k"), ips("198.51.100.5"), ports("TCP/443")), RequestedIPInUse, "allow-shared-ip"},
		{"held under another key", svc("ns/a", sharing("x"), ips("198.51.100.5")), svc("ns/b", sharing("k"), ips("198.51.100.5"), ports("TCP/443")), RequestedIPInUse, "sharing keys differ"},
		{"same key, same port", svc("ns/a", sharing("k"), ips("198.51.100.5")), svc("ns/b", sharing("k"), ips("198.51.100.5")), IncompatibleSharing, "both use TCP/80"},
		{"same key, disjoint ports", svc("ns/a", sharing("k"), ips("198.51.100.5")), svc("ns/b", sharing("k"), ips("198.51.100.5"), ports("TCP/443")), "", ""},
		{"auto-allocated, then requested", svc("ns/a", sharing("k")), svc("ns/b", sharing("k"), ips("198.51.100.0"), ports("UDP/80")), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, pool("p", "198.51.100.0/28"))
			mustAssign(t, a, c.holder)
			if c.reason != "" {
				assignFails(t, a, c.asker, c.reason, c.fragment)
				return
			}
			asg := mustAssign(t, a, c.asker)
			if first, _ := a.Lookup("ns/a"); first.IPs[0] != asg.IPs[0] {
				t.Errorf("not shared: %v and %v", first, asg)
			}
		})
	}
}
