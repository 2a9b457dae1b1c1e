package bgp

import (
	"bytes"
	"context"
	"maps"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/herald-lb/herald/test/labkit"
)

func TestLinkBandwidth(t *testing.T) {
	for _, c := range []struct{ weight, want uint32 }{
		{0, 0}, {1, 125_000}, {2, 250_000}, {3, 375_000},
		{maxWeight, maxWeight * 125_000}, {maxWeight + 1, maxWeight * 125_000}, {math.MaxUint32, maxWeight * 125_000},
	} {
		if got := linkBandwidth(c.weight); got != c.want {
			t.Errorf("linkBandwidth(%d) = %d, want %d", c.weight, got, c.want)
		}
	}
	if uint64(linkBandwidth(math.MaxUint32)) > math.MaxUint32 {
		t.Error("the cap must keep the bandwidth within 32 bits")
	}
}

// The policy text GoBGP parses is the community on the wire: type 0x40,
// sub-type 0x04, the 2-octet AS, the bandwidth as an IEEE float.
func TestLinkBandwidthCommunityOnTheWire(t *testing.T) {
	for _, c := range []struct {
		asn  uint32
		bw   uint32
		text string
		wire []byte
	}{
		{64512, 125_000, "lb:64512:125000", []byte{0x40, 0x04, 0xfc, 0x00, 0x47, 0xf4, 0x24, 0x00}},
		{4_200_000_000, 375_000, "lb:23456:375000", []byte{0x40, 0x04, 0x5b, 0xa0, 0x48, 0xb7, 0x1b, 0x00}},
	} {
		text := linkBandwidthCommunity(c.asn, c.bw)
		if text != c.text {
			t.Errorf("community(%d, %d) = %q, want %q", c.asn, c.bw, text, c.text)
		}
		ec, err := bgppkt.ParseExtendedCommunity(bgppkt.EC_SUBTYPE_LINK_BANDWIDTH, strings.TrimPrefix(text, "lb:"))
		if err != nil {
			t.Fatalf("GoBGP refuses %q: %v", text, err)
		}
		wire, err := ec.Serialize()
		must(t, err)
		if !bytes.Equal(wire, c.wire) {
			t.Errorf("%q on the wire: % x, want % x", text, wire, c.wire)
		}
	}
}

func TestDampWeights(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := func(bw uint32) attrs { return attrs{linkBW: bw, linkAS: 64512} }
	cases := []struct {
		name             string
		applied, desired delivery
		since, now       time.Time
		wantBW           map[netip.Addr]uint32
		wantSince        time.Time
	}{
		{"new prefix: at once", nil, delivery{peerA: w(250_000)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 250_000}, time.Time{}},
		{"same weight", delivery{peerA: w(250_000)}, delivery{peerA: w(250_000)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 250_000}, time.Time{}},
		{"weight changes: held from now", delivery{peerA: w(250_000)}, delivery{peerA: w(375_000)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 250_000}, t0},
		{"still held just before the hold ends", delivery{peerA: w(250_000)}, delivery{peerA: w(500_000)}, t0, t0.Add(weightHold - time.Millisecond),
			map[netip.Addr]uint32{peerA: 250_000}, t0},
		{"sent when the hold ends", delivery{peerA: w(250_000)}, delivery{peerA: w(500_000)}, t0, t0.Add(weightHold),
			map[netip.Addr]uint32{peerA: 500_000}, time.Time{}},
		{"back to the applied weight: nothing held", delivery{peerA: w(250_000)}, delivery{peerA: w(250_000)}, t0, t0.Add(time.Second),
			map[netip.Addr]uint32{peerA: 250_000}, time.Time{}},
		{"community added: at once", delivery{peerA: w(0)}, delivery{peerA: w(125_000)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 125_000}, time.Time{}},
		{"community removed: at once", delivery{peerA: w(125_000)}, delivery{peerA: w(0)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 0}, time.Time{}},
		{"new session: at once, the other held", delivery{peerA: w(125_000)}, delivery{peerA: w(250_000), peerB: w(250_000)}, time.Time{}, t0,
			map[netip.Addr]uint32{peerA: 125_000, peerB: 250_000}, t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := maps.Clone(c.desired)
			got, since := dampWeights(c.applied, c.desired, c.since, c.now)
			if !maps.EqualFunc(before, c.desired, equalAttrs) {
				t.Error("the desired delivery was changed in place")
			}
			if !since.Equal(c.wantSince) {
				t.Errorf("since %v, want %v", since, c.wantSince)
			}
			if len(got) != len(c.wantBW) {
				t.Fatalf("delivery %v, want bandwidths %v", got, c.wantBW)
			}
			for a, bw := range c.wantBW {
				if got[a].linkBW != bw {
					t.Errorf("%s: bandwidth %d, want %d", a, got[a].linkBW, bw)
				}
			}
		})
	}
}

func TestPolicyCarriesLinkBandwidth(t *testing.T) {
	req := buildPolicies(map[netip.Prefix]delivery{
		vip4:  {peerA: {linkBW: 250_000, linkAS: 64512}},
		vip4b: {peerA: {linkBW: 375_000, linkAS: 64512}},
	})
	var sts []string
	for _, st := range req.GetPolicies()[0].GetStatements() {
		sts = append(sts, statementText(st))
	}
	want := "herald-p0-v4&herald-n0-0->ROUTE_ACTION_ACCEPT ext=lb:64512:250000\n" +
		"herald-p1-v4&herald-n1-0->ROUTE_ACTION_ACCEPT ext=lb:64512:375000"
	if got := strings.Join(sts, "\n"); got != want {
		t.Errorf("statements:\n%s\nwant:\n%s", got, want)
	}
}

// The router receives the weight as the link-bandwidth community; a
// changed weight arrives after weightHold, a withdrawal at once.
func TestLoopbackLinkBandwidth(t *testing.T) {
	r := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	s, _ := newTestSpeaker(t, nil)
	d := Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6, Sessions: []Session{loSession("r", r, routerASN)},
		Paths: []Path{{Prefix: vip4, Weight: 2}, {Prefix: vip4b}}}
	apply(t, s, d)
	waitUp(t, s, "r")
	waitRoutes(t, r, "vip4 with 2 Mbit/s, vip4b without", func(rs map[netip.Prefix]route) bool {
		_, b := rs[vip4b]
		return rs[vip4].linkBW == 250_000 && rs[vip4].linkAS == speakerASN && b && rs[vip4b].linkBW == 0
	})

	t0 := time.Now()
	must(t, s.ApplyPaths(context.Background(), PathChange{Paths: []Path{{Prefix: vip4, Weight: 3}}}))
	waitRoutes(t, r, "vip4 at 3 Mbit/s", func(rs map[netip.Prefix]route) bool { return rs[vip4].linkBW == 375_000 })
	if took := time.Since(t0); took < weightHold-100*time.Millisecond {
		t.Errorf("the changed weight arrived after %s, before the hold of %s", took, weightHold)
	} else {
		t.Logf("changed weight arrived after %s (hold %s)", took, weightHold)
	}

	t0 = time.Now()
	must(t, s.ApplyPaths(context.Background(), PathChange{Prefixes: []netip.Prefix{vip4}}))
	labkit.EventuallyWhy(t, weightHold, "vip4 withdrawn at once", func() (bool, string) {
		_, ok := r.routes(t)[vip4]
		return !ok, "still there"
	})
	t.Logf("withdrawn after %s", time.Since(t0))
}
