package layer2

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNextVIPState(t *testing.T) {
	state := func(releasing, answering bool) *vipState {
		s := &vipState{releasing: releasing}
		s.answering.Store(answering)
		return s
	}
	tests := []struct {
		name                 string
		old                  *vipState
		releasing            bool
		same                 bool
		wantAnswering, stays bool
	}{
		{name: "new owned: silent until its first gratuitous packet", releasing: false, wantAnswering: false},
		{name: "new releasing (never owned): answers", releasing: true, wantAnswering: true},
		{name: "owned, announced: unchanged", old: state(false, true), same: true, wantAnswering: true},
		{name: "owned, not announced yet: unchanged", old: state(false, false), same: true, wantAnswering: false},
		{name: "releasing: unchanged", old: state(true, true), releasing: true, same: true, wantAnswering: true},
		{name: "taken over: stays silent", old: state(true, false), releasing: true, same: true, wantAnswering: false},
		{name: "owned -> releasing: answers", old: state(false, true), releasing: true, wantAnswering: true},
		{name: "owned not announced yet -> releasing: answers", old: state(false, false), releasing: true, wantAnswering: true},
		{name: "releasing -> claimed back: keeps answering", old: state(true, true), wantAnswering: true},
		{name: "taken over -> claimed back: silent until its gratuitous packet", old: state(true, false), wantAnswering: false},
		// A fenced VIP turning releasing is yielded by its machine
		// (l2owner testdata/partition-fence.txt).
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := nextVIPState(tc.old, tc.releasing)
			if (s == tc.old) != tc.same || s.releasing != tc.releasing || s.answering.Load() != tc.wantAnswering {
				t.Errorf("got %p releasing=%v answering=%v (old %p)", s, s.releasing, s.answering.Load(), tc.old)
			}
			s.markAnnounced()
			if want := tc.wantAnswering || !tc.releasing; s.answering.Load() != want {
				t.Errorf("after markAnnounced: answering=%v, want %v", s.answering.Load(), want)
			}
		})
	}
}

func TestReleasingSet(t *testing.T) {
	other := netip.MustParseAddr("198.51.100.71")
	got := releasingSet([]Announcement{
		{IP: vip4, Releasing: true},
		{IP: netip.MustParseAddr("::ffff:198.51.100.70"), Releasing: false}, // the same VIP, owned
		{IP: vip6, Releasing: true},
		{IP: vip6, Releasing: true},
		{IP: other},
		{IP: netip.Addr{}, Releasing: true},
	})
	if len(got) != 1 || !got[vip6] {
		t.Fatalf("releasingSet = %v, want only %v", got, vip6)
	}
}

type yieldCall struct {
	vip   netip.Addr
	iface string
	by    net.HardwareAddr
}

// releaseAnnouncer is a test announcer (fake responders) with OnYield
// calls on a channel and its own registry, running on node(true).
func releaseAnnouncer(t *testing.T) (*Announcer, *fakeResponders, chan yieldCall, *linkTable, *prometheus.Registry) {
	t.Helper()
	yields := make(chan yieldCall, 8)
	reg := prometheus.NewRegistry()
	a, f, logs := testAnnouncer(t, Config{
		Registerer: reg,
		OnYield: func(vip netip.Addr, iface string, by net.HardwareAddr) {
			yields <- yieldCall{vip, iface, by}
		},
	})
	links := node(true)
	a.publish(links.snapshot())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs)
		}
	})
	return a, f, yields, links, reg
}

func expectYield(t *testing.T, yields chan yieldCall, vip netip.Addr) {
	t.Helper()
	select {
	case y := <-yields:
		if y.vip != vip || y.iface != "eth0" || !bytes.Equal(y.by, otherMAC) {
			t.Fatalf("OnYield(%v, %s, %v), want (%v, eth0, %v)", y.vip, y.iface, y.by, vip, otherMAC)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnYield not called")
	}
}

func TestAnnouncerRelease(t *testing.T) {
	a, f, yields, links, reg := releaseAnnouncer(t)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f, "open eth0/arp", "vips eth0/arp [198.51.100.70]", "announce eth0/arp 198.51.100.70")

	// Owned -> releasing: still answered, no longer advertised, burst stopped.
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	expectEvents(t, f, "vips eth0/arp [198.51.100.70]", "silence eth0/arp 198.51.100.70")
	o := a.owned.Load()
	if !o.owns("eth0", vip4) || o.advertises("eth0", vip4) || !o.releasing("eth0", vip4) {
		t.Fatal("releasing VIP: want answered, not advertised")
	}

	// Taken over, once.
	if !a.yield("eth0", protoARP, vip4, otherMAC) {
		t.Fatal("yield refused")
	}
	if a.yield("eth0", protoARP, vip4, otherMAC) {
		t.Fatal("second yield accepted")
	}
	expectYield(t, yields, vip4)
	if a.owns("eth0", vip4) || len(a.Interfaces(vip4)) != 0 {
		t.Fatal("still answered after yielding")
	}
	if v := testutil.ToFloat64(a.metrics.handovers.WithLabelValues("eth0", protoARP)); v != 1 {
		t.Errorf("herald_l2_handovers_total = %g, want 1", v)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", err, problems)
	}

	// Stays silent: same set again, a reconcile, the link going down and up.
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	a.publish(links.snapshot())
	links.setLink(linkInfo{name: "eth0", index: 2, up: false, mac: "02:00:00:00:00:11"})
	a.publish(links.snapshot())
	links.setLink(linkInfo{name: "eth0", index: 2, up: true, mac: "02:00:00:00:00:11"})
	a.publish(links.snapshot())
	expectEvents(t, f, "vips eth0/arp [198.51.100.70]", "close eth0/arp", "open eth0/arp", "vips eth0/arp [198.51.100.70]")
	if a.owns("eth0", vip4) {
		t.Fatal("a link flap undid the takeover")
	}

	// Claimed back: announced and answered again.
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f, "vips eth0/arp [198.51.100.70]", "announce eth0/arp 198.51.100.70")
	if !a.owns("eth0", vip4) || !a.owned.Load().advertises("eth0", vip4) || a.yield("eth0", protoARP, vip4, otherMAC) {
		t.Fatal("claimed-back VIP: want answered, advertised, not yielding")
	}
}

func TestAnnouncerReleaseNeverOwned(t *testing.T) {
	a, f, yields, _, _ := releaseAnnouncer(t)
	a.SetAnnouncements([]Announcement{{IP: vip6, Releasing: true}, {IP: vip4}})
	expectEvents(t, f, "open eth0/arp", "vips eth0/arp [198.51.100.70]", "open eth0/ndp", "vips eth0/ndp [2001:db8:1::70]",
		"announce eth0/arp 198.51.100.70")
	if !a.owns("eth0", vip6) || a.owned.Load().advertises("eth0", vip6) {
		t.Fatal("releasing a VIP never owned: want answered, not advertised")
	}
	if !slicesEqual(a.Interfaces(vip6), "eth0") {
		t.Fatalf("Interfaces = %v", a.Interfaces(vip6))
	}
	if a.yield("eth0", protoNDP, vip4, otherMAC) {
		t.Fatal("an owned VIP yielded")
	}
	if !a.yield("eth0", protoNDP, vip6, otherMAC) {
		t.Fatal("yield refused")
	}
	expectYield(t, yields, vip6)

	// Dropped, then listed as releasing again: a new hand-over.
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f, "close eth0/ndp", "vips eth0/arp [198.51.100.70]")
	a.SetAnnouncements([]Announcement{{IP: vip6, Releasing: true}, {IP: vip4}})
	if !a.owns("eth0", vip6) {
		t.Fatal("a VIP dropped and listed again stayed yielded")
	}
}

func TestAnnouncerReleaseLogs(t *testing.T) {
	a, _, logs := testAnnouncer(t, Config{})
	a.publish(node(true).snapshot())
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	a.yield("eth0", protoARP, vip4, otherMAC)
	a.SetAnnouncements(nil)
	for _, line := range []string{
		`msg="releasing VIP: answering until another host announces it" ip=198.51.100.70 interface=eth0 protocol=arp`,
		`msg="VIP taken over by another host, stopped answering" ip=198.51.100.70 interface=eth0 protocol=arp by=02:00:00:00:00:12`,
		`msg="stopped announcing VIP" ip=198.51.100.70 interface=eth0 reason="handed over"`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("log lacks %s:\n%s", line, logs.String())
		}
	}
}

func slicesEqual(got []string, want ...string) bool {
	return strings.Join(got, ",") == strings.Join(want, ",")
}
