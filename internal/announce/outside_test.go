package announce

import (
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// withRecord gives a pool the status the controller writes, recording ips
// as held from it outside its ranges.
func withRecord(p *v1beta1.IPAddressPool, ips ...string) *v1beta1.IPAddressPool {
	p.Generation = 1
	p.Status.ObservedGeneration = 1
	p.Status.OutsideRanges = int64(len(ips))
	p.Status.AddressesOutsideRanges = ips
	return p
}

// outsideState is mixedState with the pools' records of addresses held
// outside their ranges; nil leaves a pool's status unwritten.
func outsideState(t *testing.T, l2Rec, bgpRec []string, svcs ...Service) State {
	l2, bgp := pool("l2-pool", "198.51.100.64/27", "2001:db8:1::/120"), pool("bgp-pool", "198.51.100.128/27", "2001:db8:2::/120")
	if l2Rec != nil {
		withRecord(l2, l2Rec...)
	}
	if bgpRec != nil {
		withRecord(bgp, bgpRec...)
	}
	st := mixedState(t, svcs...)
	in := config.Input{Pools: []*v1beta1.IPAddressPool{l2, bgp}}
	c := cfg(t, in)
	st.Config.Pools = c.Pools
	return st
}

func TestOutsideAddressFollowsThePoolsRecordNotTheAnnotation(t *testing.T) {
	liar := svc("ns/liar", "198.51.100.10") // in no pool's ranges
	liar.Pool = "bgp-pool"
	st := outsideState(t, []string{"198.51.100.10"}, []string{}, liar)
	for _, n := range []string{"node1", "node2"} {
		if r := BGP(st, n); len(r.Routes) != 0 {
			t.Errorf("%s advertises %v for an address l2-pool records", n, routes(r))
		}
	}
	if o := owners(L2(st)); o["198.51.100.10"] == "" {
		t.Errorf("L2 owners %v: the address l2-pool records is not answered", o)
	}
	// the other way round: bgp-pool records it, the annotation names l2-pool
	liar.Pool = "l2-pool"
	st = outsideState(t, []string{}, []string{"198.51.100.10"}, liar)
	if o := owners(L2(st)); len(o) != 0 {
		t.Errorf("L2 owners %v for an address bgp-pool records", o)
	}
	if got := routes(BGP(st, "node1")); len(got) != 1 || got["198.51.100.0/27"] == nil {
		t.Errorf("routes %v, want bgp-pool's aggregate of the address", got)
	}
}

func TestOutsideAddressRecordedNowhereIsAnnouncedByNoPool(t *testing.T) {
	for _, named := range []string{"l2-pool", "bgp-pool", ""} {
		s := svc("ns/s", "198.51.100.10")
		s.Pool = named
		st := outsideState(t, []string{}, []string{"198.51.100.200"}, s)
		if o := owners(L2(st)); len(o) != 0 {
			t.Errorf("annotation %q: L2 owners %v", named, o)
		}
		if r := BGP(st, "node1"); len(r.Routes) != 0 {
			t.Errorf("annotation %q: routes %v", named, routes(r))
		}
		if got := StatusOf(st, "ns/s"); got.Announced {
			t.Errorf("annotation %q: status %+v, want not announced", named, got)
		}
	}
}

// TestOutsideAddressUnrecordedPoolKeepsTheAnnotation: while the named
// pool's status has no record at all (upgrade), an address no pool
// contains or records keeps the named pool's advertisements.
func TestOutsideAddressUnrecordedPoolKeepsTheAnnotation(t *testing.T) {
	s := svc("ns/s", "198.51.100.10")
	s.Pool = "l2-pool"
	st := outsideState(t, nil, []string{}, s)
	if o := owners(L2(st)); o["198.51.100.10"] == "" {
		t.Errorf("L2 owners %v, want the address answered for l2-pool", o)
	}
	if got := AnnotationFallbacks(st); len(got) != 1 || got[0] != "ns/s 198.51.100.10 l2-pool" {
		t.Errorf("fallbacks %v", got)
	}
	// bgp-pool has a record: naming it gets nothing
	s.Pool = "bgp-pool"
	st = outsideState(t, nil, []string{}, s)
	if r := BGP(st, "node1"); len(r.Routes) != 0 {
		t.Errorf("routes %v for an address bgp-pool's record leaves out", routes(r))
	}
	if got := AnnotationFallbacks(st); len(got) != 0 {
		t.Errorf("fallbacks %v, want none", got)
	}
}
