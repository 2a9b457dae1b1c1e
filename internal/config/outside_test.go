package config

import (
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

// recordOutside gives the pool a status as the controller writes it for
// its current generation, recording ips as held outside its ranges.
func recordOutside(p *v1beta1.IPAddressPool, ips ...string) *v1beta1.IPAddressPool {
	p = p.DeepCopy()
	if p.Generation == 0 {
		p.Generation = 1
	}
	p.Status.ObservedGeneration = p.Generation
	p.Status.OutsideRanges = int64(len(ips))
	p.Status.AddressesOutsideRanges = ips
	return p
}

// TestPoolHoldingWithOutsideRecords: the pool whose ranges contain an
// address comes first, then the pool whose status records it as held
// outside its ranges; an address in neither belongs to no pool.
func TestPoolHoldingWithOutsideRecords(t *testing.T) {
	cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{
		recordOutside(poolObj("l2", 1, "198.51.100.0/28"), "198.51.100.77", "2001:db8:9::1"),
		recordOutside(poolObj("bgp", 2, "198.51.100.128/28")),
	}})
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	for _, c := range []struct{ ip, want string }{
		{"198.51.100.3", "l2"},
		{"198.51.100.130", "bgp"},
		{"198.51.100.77", "l2"},
		{"2001:db8:9::1", "l2"},
		{"198.51.100.78", ""},
	} {
		p, ok := cfg.PoolHolding(netip.MustParseAddr(c.ip))
		got := ""
		if ok {
			got = p.Name
		}
		if got != c.want {
			t.Errorf("PoolHolding(%s) = %q, want %q", c.ip, got, c.want)
		}
		if _, ok := cfg.PoolFor(netip.MustParseAddr(c.ip)); ok != (c.ip == "198.51.100.3" || c.ip == "198.51.100.130") {
			t.Errorf("PoolFor(%s) = %v: it looks at ranges only", c.ip, ok)
		}
	}
}

// TestPoolOfRecordTrustsTheAnnotationOnlyWithoutRecord: the pool an
// annotation names decides an address no pool contains or records only
// when that pool's status has no current record.
func TestPoolOfRecordTrustsTheAnnotationOnlyWithoutRecord(t *testing.T) {
	gen2 := func(p *v1beta1.IPAddressPool) *v1beta1.IPAddressPool { p.Generation = 2; return p }
	oldVersion := recordOutside(poolObj("bgp", 2, "198.51.100.128/28"))
	oldVersion.Status.OutsideRanges = 1 // a count without the list
	cases := []struct {
		name     string
		bgp      *v1beta1.IPAddressPool
		ip       string
		want     string
		fallback bool
	}{
		{"recorded by l2, annotation names bgp", recordOutside(poolObj("bgp", 2, "198.51.100.128/28")), "198.51.100.77", "l2", false},
		{"in bgp's ranges", recordOutside(poolObj("bgp", 2, "198.51.100.128/28")), "198.51.100.130", "bgp", false},
		{"recorded nowhere, bgp has a record", recordOutside(poolObj("bgp", 2, "198.51.100.128/28")), "198.51.100.78", "", false},
		{"recorded nowhere, bgp's status never written", poolObj("bgp", 2, "198.51.100.128/28"), "198.51.100.78", "bgp", true},
		{"recorded nowhere, bgp's record is of an older generation", gen2(recordOutside(poolObj("bgp", 2, "198.51.100.128/28"))), "198.51.100.78", "bgp", true},
		{"recorded nowhere, bgp written by a version without the list", oldVersion, "198.51.100.78", "bgp", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, ps := Build(Input{Pools: []*v1beta1.IPAddressPool{
				recordOutside(poolObj("l2", 1, "198.51.100.0/28"), "198.51.100.77"), c.bgp}})
			if len(ps) > 0 {
				t.Fatal(ps)
			}
			p, fallback := cfg.PoolOfRecord(netip.MustParseAddr(c.ip), "bgp")
			got := ""
			if p != nil {
				got = p.Name
			}
			if got != c.want || fallback != c.fallback {
				t.Errorf("PoolOfRecord = %q (fallback %v), want %q (fallback %v)", got, fallback, c.want, c.fallback)
			}
		})
	}
}

// TestLastGoodKeepsTheCurrentOutsideRecord: a pool kept in its last valid
// version still carries the record its current status holds, not the
// one of the version remembered.
func TestLastGoodKeepsTheCurrentOutsideRecord(t *testing.T) {
	g := NewLastGood()
	a := withUID(recordOutside(poolObj("a", 1, "198.51.100.0/28")), "ua")
	if _, ps := g.Build(Input{Pools: []*v1beta1.IPAddressPool{a}}); len(ps) > 0 {
		t.Fatal(ps)
	}
	bad := edit(a, poolMeta, func(p *v1beta1.IPAddressPool) {
		p.Spec.Addresses = []string{"198.51.100.0/28", "198.51.100.8/29"}
	})
	bad = recordOutside(bad, "198.51.100.77")
	cfg, _ := g.Build(Input{Pools: []*v1beta1.IPAddressPool{bad}})
	p := cfg.Pools["a"]
	if p == nil || poolRanges(cfg, "a") != "198.51.100.0/28" {
		t.Fatalf("pool a in force: %s", poolRanges(cfg, "a"))
	}
	if !p.HoldsOutside(netip.MustParseAddr("198.51.100.77")) || p.OutsideUnrecorded {
		t.Errorf("kept pool lost the current record: %v unrecorded=%v", p.Outside, p.OutsideUnrecorded)
	}
	// A fresh process seeded from the in-force record reads it too.
	rec := bad.DeepCopy()
	rec.Status.InForce = PoolInForce(a)
	cfg, _ = NewLastGood().Build(Input{Pools: []*v1beta1.IPAddressPool{rec}})
	if p := cfg.Pools["a"]; p == nil || !p.HoldsOutside(netip.MustParseAddr("198.51.100.77")) {
		t.Errorf("seeded pool lost the current record: %+v", p)
	}
}
