package allocator

import (
	"strings"
	"testing"
)

func TestCompatible(t *testing.T) {
	h := func(opts ...reqOpt) *holder { r := svc("ns/x", opts...); return newHolder(&r) }
	cases := []struct {
		name string
		a, b *holder
		why  string // "" = compatible
	}{
		{"same key, different ports", h(sharing("k")), h(sharing("k"), ports("TCP/443")), ""},
		{"TCP and UDP on one port", h(sharing("k"), ports("TCP/53")), h(sharing("k"), ports("UDP/53")), ""},
		{"empty protocol is TCP", h(sharing("k"), ports("/80")), h(sharing("k"), ports("TCP/80")), "both use TCP/80"},
		{"same port", h(sharing("k"), ports("TCP/443", "TCP/80")), h(sharing("k"), ports("UDP/1", "TCP/80")), "both use TCP/80"},
		{"no key on one", h(sharing("k")), h(ports("TCP/443")), "allow-shared-ip"},
		{"no key on both", h(), h(ports("TCP/443")), "allow-shared-ip"},
		{"keys differ", h(sharing("k")), h(sharing("j"), ports("TCP/443")), "sharing keys differ"},
		{"ETP Local on one only", h(sharing("k"), etpLocal("app=x")), h(sharing("k"), ports("TCP/443"), selector("app=x")), "only one of them"},
		{"ETP Local, same selector", h(sharing("k"), etpLocal("app=x")), h(sharing("k"), ports("TCP/443"), etpLocal("app=x")), ""},
		{"ETP Local, different selectors", h(sharing("k"), etpLocal("app=x")), h(sharing("k"), ports("TCP/443"), etpLocal("app=y")), ""},
		{"ETP Local, different selectors, same port", h(sharing("k"), etpLocal("app=x")), h(sharing("k"), etpLocal("app=y")), "both use TCP/80"},
		{"ETP Cluster, different selectors", h(sharing("k"), selector("app=x")), h(sharing("k"), ports("TCP/443"), selector("app=y")), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, pair := range [][2]*holder{{c.a, c.b}, {c.b, c.a}} {
				ok, why := compatible(pair[0], pair[1])
				if ok != (c.why == "") || !strings.Contains(why, c.why) {
					t.Errorf("compatible = %v, %q; want %q", ok, why, c.why)
				}
			}
		})
	}
}

func TestSharingKeys(t *testing.T) {
	t.Run("join before taking a new address", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/other"))
		mustAssign(t, a, svc("ns/web", sharing("k")))
		wantAssignment(t, mustAssign(t, a, svc("ns/dns", sharing("k"), ports("UDP/53"))), "p", "198.51.100.1")
	})
	t.Run("joining beats a higher-priority pool", func(t *testing.T) {
		a := newAlloc(t, pool("low", "198.51.100.0/28", priority(9)))
		mustAssign(t, a, svc("ns/web", sharing("k")))
		if err := a.SetPools([]Pool{pool("low", "198.51.100.0/28", priority(9)), pool("high", "198.51.100.16/28", priority(0))}); err != nil {
			t.Fatal(err)
		}
		wantAssignment(t, mustAssign(t, a, svc("ns/dns", sharing("k"), ports("UDP/53"))), "low", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/new")), "high", "198.51.100.16")
	})
	t.Run("only in a pool the Service may use", func(t *testing.T) {
		a := newAlloc(t, pool("web", "198.51.100.0/28", svcSelector("tier=web"), priority(0)), pool("any", "198.51.100.16/28"))
		wantAssignment(t, mustAssign(t, a, svc("ns/web", sharing("k"), svcLabels("tier=web"))), "web", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/dns", sharing("k"), ports("UDP/53"))), "any", "198.51.100.16")
	})
	t.Run("a clash takes a new address", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/a", sharing("k")))
		wantAssignment(t, mustAssign(t, a, svc("ns/b", sharing("k"))), "p", "198.51.100.1")
		wantAssignment(t, mustAssign(t, a, svc("ns/c", sharing("k"), ports("TCP/443"))), "p", "198.51.100.0")
	})
	t.Run("a clash in a full pool says why", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/32"))
		mustAssign(t, a, svc("ns/a", sharing("k")))
		assignFails(t, a, svc("ns/b", sharing("k")), PoolExhausted, "no free IPv4 address", "cannot be shared with Service ns/a: both use TCP/80")
	})
	t.Run("ETP Local shares whatever the selectors", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28"))
		mustAssign(t, a, svc("ns/a", sharing("k"), etpLocal("app=x")))
		wantAssignment(t, mustAssign(t, a, svc("ns/b", sharing("k"), ports("UDP/53"), etpLocal("app=y"))), "p", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/c", sharing("k"), ports("UDP/54"), etpLocal("app=x"))), "p", "198.51.100.0")
		wantAssignment(t, mustAssign(t, a, svc("ns/d", sharing("k"), ports("UDP/55"), selector("app=y"))), "p", "198.51.100.1")
	})
	t.Run("dual-stack joins both families", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/28", "2001:db8::/120"))
		mustAssign(t, a, svc("ns/x", requireDual(v4, v6)))
		mustAssign(t, a, svc("ns/a", sharing("k"), requireDual(v4, v6)))
		wantAssignment(t, mustAssign(t, a, svc("ns/b", sharing("k"), ports("UDP/53"), requireDual(v6, v4))), "p", "2001:db8::1", "198.51.100.1")
		wantAssignment(t, mustAssign(t, a, svc("ns/c", sharing("k"), ports("UDP/54"))), "p", "198.51.100.1")
	})
	t.Run("the address is free when its last holder goes", func(t *testing.T) {
		a := newAlloc(t, pool("p", "198.51.100.0/32"))
		mustAssign(t, a, svc("ns/a", sharing("k")))
		mustAssign(t, a, svc("ns/b", sharing("k"), ports("UDP/53")))
		a.Release("ns/a")
		assignFails(t, a, svc("ns/c"), PoolExhausted)
		a.Release("ns/b")
		checkBook(t, a)
		wantAssignment(t, mustAssign(t, a, svc("ns/c")), "p", "198.51.100.0")
	})
}
