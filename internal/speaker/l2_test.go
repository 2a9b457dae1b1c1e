package speaker

import (
	"net/netip"
	"testing"
	"time"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/layer2"
)

var vip = netip.MustParseAddr("198.51.100.70")

func result(owner string) announce.L2Result {
	if owner == "" {
		return announce.L2Result{}
	}
	return announce.L2Result{Owners: []announce.L2Owner{{IP: vip, Node: owner, Services: []string{"ns/web"}}}}
}

func wantAnnouncements(t *testing.T, got []layer2.Announcement, releasing ...bool) {
	t.Helper()
	if len(got) != len(releasing) {
		t.Fatalf("announcements %+v, want %d", got, len(releasing))
	}
	for i, r := range releasing {
		if got[i].Releasing != r {
			t.Errorf("announcement %d: %+v, want releasing=%v", i, got[i], r)
		}
	}
}

func TestPlanClaimsOnlyOnceSettled(t *testing.T) {
	l := newL2State()
	now := time.Unix(1000, 0)
	p := l.plan("node1", result("node1"), false, now, 2*time.Second)
	wantAnnouncements(t, p.want)
	p = l.plan("node1", result("node1"), true, now, 2*time.Second)
	wantAnnouncements(t, p.want, false)
	if len(p.claimed) != 1 {
		t.Errorf("claimed %v", p.claimed)
	}
	p = l.plan("node1", result("node1"), true, now, 2*time.Second)
	if len(p.claimed) != 0 {
		t.Error("claimed twice")
	}
}

func TestPlanMakeBeforeBreak(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	l.plan("node1", result("node1"), true, t0, 2*time.Second)
	// node2 becomes the owner: keep answering, as releasing
	p := l.plan("node1", result("node2"), true, t0.Add(10*time.Millisecond), 2*time.Second)
	wantAnnouncements(t, p.want, true)
	if p.recheck != t0.Add(10*time.Millisecond+2*time.Second) {
		t.Errorf("recheck %v", p.recheck)
	}
	// node2's gratuitous ARP seen: stop at once
	l.yielded(vip)
	p = l.plan("node1", result("node2"), true, t0.Add(20*time.Millisecond), 2*time.Second)
	wantAnnouncements(t, p.want)
	if len(p.dropped) != 1 || l.announcedCount() != 0 {
		t.Errorf("dropped %v, count %d", p.dropped, l.announcedCount())
	}
}

func TestPlanGraceEndsRelease(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	l.plan("node1", result("node1"), true, t0, time.Second)
	l.plan("node1", result("node2"), true, t0, time.Second)
	p := l.plan("node1", result("node2"), true, t0.Add(999*time.Millisecond), time.Second)
	wantAnnouncements(t, p.want, true)
	p = l.plan("node1", result("node2"), true, t0.Add(time.Second), time.Second)
	wantAnnouncements(t, p.want)
}

func TestPlanNoNewOwnerStopsAtOnce(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	l.plan("node1", result("node1"), true, t0, time.Second)
	p := l.plan("node1", result(""), true, t0, time.Second) // Service deleted, or nobody eligible
	wantAnnouncements(t, p.want)
}

func TestPlanOwnershipComesBackWhileReleasing(t *testing.T) {
	l := newL2State()
	t0 := time.Unix(1000, 0)
	l.plan("node1", result("node1"), true, t0, time.Second)
	l.plan("node1", result("node2"), true, t0, time.Second)
	p := l.plan("node1", result("node1"), true, t0.Add(time.Millisecond), time.Second)
	wantAnnouncements(t, p.want, false)
	if len(p.claimed) != 1 {
		t.Error("a returning address must be claimed again (gratuitous burst)")
	}
}
