package layer2

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-lb/herald/test/labkit"
)

// foreignCall is one OnForeignClaim call.
type foreignCall struct {
	vip   netip.Addr
	iface string
	by    net.HardwareAddr
}

// ownedVIPAnnouncer is askingAnnouncer owning vip on eth0, answered, with
// a fence that acts at once and verifies every 20 ms; OnForeignClaim
// calls go to the channel returned.
func ownedVIPAnnouncer(t *testing.T, vip netip.Addr) (*Announcer, *fakeProto, chan foreignCall) {
	t.Helper()
	a, p, _ := askingAnnouncer(t)
	a.cfg.FenceSettle = time.Nanosecond
	a.cfg.FenceVerify = 20 * time.Millisecond
	claims := make(chan foreignCall, 8)
	a.cfg.OnForeignClaim = func(vip netip.Addr, iface string, by net.HardwareAddr) { claims <- foreignCall{vip, iface, by} }
	a.SetAnnouncements([]Announcement{{IP: vip}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip) })
	return a, p, claims
}

// TestFenceYieldsToAKnownSpeaker: another speaker's node whose MAC
// outranks this node's for the VIP wins the fence, as before.
func TestFenceYieldsToAKnownSpeaker(t *testing.T) {
	vip := fenceVIP(t, false)
	a, _, claims := ownedVIPAnnouncer(t, vip)
	a.SetSpeakerMACs([]net.HardwareAddr{otherMAC}, true)
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
	if a.owns("eth0", vip) {
		t.Fatal("still answering after another speaker that outranks this node announced the VIP")
	}
	if v := testutil.ToFloat64(a.metrics.conflicts.WithLabelValues("eth0", protoARP, "lost")); v != 1 {
		t.Errorf("herald_l2_conflicts_total{result=lost} = %g, want 1", v)
	}
	if v := testutil.ToFloat64(a.metrics.foreignClaims.WithLabelValues("eth0", protoARP)); v != 0 {
		t.Errorf("herald_l2_foreign_claims_total = %g, want 0", v)
	}
	if len(claims) != 0 {
		t.Error("a speaker's announcement reported as a foreign claim")
	}
}

// TestFenceKeepsAnswersFromAForeignHost: a host that is no speaker's
// node, whose MAC outranks this node's for the VIP, announces it and then
// answers this node's questions: this node keeps answering, announces the
// VIP again after each announcement, and reports the claim (metric every
// time, OnForeignClaim once per 2 × Refresh).
func TestFenceKeepsAnswersFromAForeignHost(t *testing.T) {
	vip := fenceVIP(t, false) // otherMAC outranks ourMAC
	a, p, claims := ownedVIPAnnouncer(t, vip)
	third := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x13}
	a.SetSpeakerMACs([]net.HardwareAddr{third}, true)
	before := p.count(vip)
	s := a.owned.Load().state("eth0", vip)
	// Reported once per 2 × Refresh, and never remembered for a
	// hand-over: l2owner testdata/lan-host-attack.txt.
	for i := range 3 {
		a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
		a.answered("eth0", vip, otherMAC)
		if !a.owns("eth0", vip) {
			t.Fatalf("announcement %d of a foreign host silenced this node", i+1)
		}
		labkit.Eventually(t, 5*time.Second, "the VIP announced again", func() bool { return p.count(vip) >= before+i+1 })
	}
	if v := testutil.ToFloat64(a.metrics.foreignClaims.WithLabelValues("eth0", protoARP)); v != 3 {
		t.Errorf("herald_l2_foreign_claims_total = %g, want 3", v)
	}
	if v := testutil.CollectAndCount(a.metrics.conflicts); v != 0 {
		t.Errorf("%d conflict series for a foreign claim, want none", v)
	}
	select {
	case c := <-claims:
		if c.vip != vip || c.iface != "eth0" || !bytes.Equal(c.by, otherMAC) {
			t.Errorf("OnForeignClaim(%v, %s, %v), want (%v, eth0, %v)", c.vip, c.iface, c.by, vip, otherMAC)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnForeignClaim not called")
	}
	if s.heard() {
		t.Error("a foreign host's frames counted as heard (they would keep a fence up)")
	}
	// A foreign host that does not outrank this node is a foreign claim
	// too, not a conflict this node won.
	loser := fenceVIP(t, true)
	a.SetAnnouncements([]Announcement{{IP: vip}, {IP: loser}})
	labkit.Eventually(t, 5*time.Second, "the second VIP answered", func() bool { return a.owns("eth0", loser) })
	a.foreignAnnouncement("eth0", protoARP, loser, ourMAC, otherMAC)
	if a.owned.Load().state("eth0", loser).beatenHost() != nil {
		t.Error("a foreign host recorded as beaten (it would be told when this node gives the VIP up)")
	}
	if v := testutil.ToFloat64(a.metrics.foreignClaims.WithLabelValues("eth0", protoARP)); v != 4 {
		t.Errorf("herald_l2_foreign_claims_total = %g, want 4", v)
	}
}

// TestFenceYieldsToAnyHostUntilTheSetIsComplete: before the speaker has
// given a complete set of the other speakers' MACs, any host that
// outranks this node wins the fence, so a split brain with a speaker not
// known yet is still resolved.
func TestFenceYieldsToAnyHostUntilTheSetIsComplete(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(a *Announcer)
	}{
		{"no set given", func(*Announcer) {}},
		{"incomplete set", func(a *Announcer) {
			a.SetSpeakerMACs([]net.HardwareAddr{{0x02, 0, 0, 0, 0, 0x13}}, false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vip := fenceVIP(t, false)
			a, _, claims := ownedVIPAnnouncer(t, vip)
			tc.set(a)
			a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
			if a.owns("eth0", vip) {
				t.Fatal("still answering after a host that outranks this node announced the VIP")
			}
			if len(claims) != 0 {
				t.Error("reported as a foreign claim")
			}
		})
	}
}

// TestForeignFenceLiftedOnceTheSetIsComplete: a fence lost to a host
// while the set was incomplete is lifted at the next verification once
// the set is complete without that host, although it still answers.
func TestForeignFenceLiftedOnceTheSetIsComplete(t *testing.T) {
	vip := fenceVIP(t, false)
	a, p, _ := ownedVIPAnnouncer(t, vip)
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
	s := a.owned.Load().state("eth0", vip)
	if !s.fenced(time.Now()) {
		t.Fatal("not fenced")
	}
	sent := p.count(vip)
	a.SetSpeakerMACs(nil, true)
	labkit.Eventually(t, 5*time.Second, "the fence lifted", func() bool {
		a.answered("eth0", vip, otherMAC) // the host keeps answering
		return a.owns("eth0", vip)
	})
	labkit.Eventually(t, 5*time.Second, "the VIP announced again", func() bool { return p.count(vip) > sent })
	if v := testutil.ToFloat64(a.metrics.fenceLifted.WithLabelValues("eth0", protoARP)); v != 1 {
		t.Errorf("herald_l2_fence_lifted_total = %g, want 1", v)
	}
}

// TestForeignClaimAnsweredWithABurst: the owner answers a foreign claim
// with a whole gratuitous burst (Config.Gratuitous), not one packet: a
// client's cache ignores an update within a second of the foreign one.
func TestForeignClaimAnsweredWithABurst(t *testing.T) {
	vip := fenceVIP(t, false)
	a, _, _, _, _ := releaseAnnouncer(t)
	p := &fakeProto{sent: map[netip.Addr]int{}}
	a.start = func(_ context.Context, spec responderSpec) responderHandle {
		r := testResponder(t, p, 3, time.Millisecond)
		r.spec.advertises, r.spec.announced = spec.advertises, spec.announced
		return r
	}
	a.SetSpeakerMACs(nil, true)
	a.SetAnnouncements([]Announcement{{IP: vip}})
	labkit.Eventually(t, 5*time.Second, "the first burst", func() bool { return p.count(vip) == 3 })
	a.foreignAnnouncement("eth0", protoARP, vip, ourMAC, otherMAC)
	labkit.Eventually(t, 5*time.Second, "a second burst", func() bool { return p.count(vip) == 6 })
	if !a.owns("eth0", vip) {
		t.Fatal("not answering after a foreign claim")
	}
}
