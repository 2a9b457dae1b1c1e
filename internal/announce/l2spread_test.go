package announce

import (
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

// threeByThree: a Service with three addresses of each family on three
// nodes, and a Service with one address of each.
func threeByThree(t *testing.T, live func(string) bool, more ...Service) State {
	st := l2State(t, []*v1beta1.L2Advertisement{l2ad("all", nil)}, nodes("node1", "node2", "node3"),
		append([]Service{
			svc("ns/spread", "198.51.100.64", "198.51.100.65", "198.51.100.66", "2001:db8:1::64", "2001:db8:1::65", "2001:db8:1::66"),
			svc("ns/one", "198.51.100.70", "2001:db8:1::70"),
		}, more...)...)
	st.Live = live
	return st
}

var (
	spreadV4 = []string{"198.51.100.64", "198.51.100.65", "198.51.100.66"}
	spreadV6 = []string{"2001:db8:1::64", "2001:db8:1::65", "2001:db8:1::66"}
)

// TestL2SpreadsAServicesAddresses: each family's three addresses go to
// three different nodes; a speaker dying moves only its addresses (one
// per family), to the node holding none of its siblings; the Service
// with one address per family keeps rendezvous hashing's owner.
func TestL2SpreadsAServicesAddresses(t *testing.T) {
	before := owners(L2(threeByThree(t, nil)))
	for _, fam := range [][]string{spreadV4, spreadV6} {
		seen := map[string]bool{}
		for _, ip := range fam {
			seen[before[ip]] = true
		}
		if len(seen) != 3 {
			t.Fatalf("owners %v: %v not on three nodes", before, fam)
		}
	}
	all := []string{"node1", "node2", "node3"}
	for _, ip := range []string{"198.51.100.70", "2001:db8:1::70"} {
		if want := Owner(mustAddr(ip), all); before[ip] != want {
			t.Errorf("%s owned by %s, rendezvous hashing says %s", ip, before[ip], want)
		}
	}
	for _, dead := range all {
		after := owners(L2(threeByThree(t, func(n string) bool { return n != dead })))
		for ip, was := range before {
			switch {
			case was == dead && after[ip] == dead:
				t.Errorf("%s dead: %s still owned by it", dead, ip)
			case was != dead && after[ip] != was:
				t.Errorf("%s dead: %s moved from %s to %s", dead, ip, was, after[ip])
			}
		}
	}
}

// TestL2SpreadWithLocalEndpoints: with externalTrafficPolicy: Local, the
// addresses spread over the nodes with local endpoints only: two nodes
// with pods for three addresses, one of them holds two.
func TestL2SpreadWithLocalEndpoints(t *testing.T) {
	st := threeByThree(t, nil)
	st.Services[0] = local(st.Services[0], "node1", "node3")
	got := owners(L2(st))
	for _, fam := range [][]string{spreadV4, spreadV6} {
		held := map[string]int{}
		for _, ip := range fam {
			held[got[ip]]++
		}
		if held["node1"]+held["node3"] != 3 || held["node1"] == 0 || held["node3"] == 0 {
			t.Errorf("owners %v: %v not spread over node1 and node3", got, fam)
		}
	}
}

// TestL2SpreadSharedAddresses: two Services sharing three addresses are
// spread as one group, so both see three distinct owners.
func TestL2SpreadSharedAddresses(t *testing.T) {
	twin := svc("ns/twin", "198.51.100.64", "198.51.100.65", "198.51.100.66")
	twin.SharingKey = "k"
	got := owners(L2(threeByThree(t, nil, twin)))
	seen := map[string]bool{}
	for _, ip := range spreadV4 {
		seen[got[ip]] = true
	}
	if len(seen) != 3 {
		t.Errorf("owners %v: shared addresses not on three nodes", got)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
