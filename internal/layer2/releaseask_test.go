package layer2

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// askingAnnouncer is releaseAnnouncer whose responders are real ones on a
// fakeProto, so that the questions and give-ups they send are recorded.
func askingAnnouncer(t *testing.T) (*Announcer, *fakeProto, chan yieldCall) {
	t.Helper()
	a, _, yields, _, _ := releaseAnnouncer(t)
	p := &fakeProto{sent: map[netip.Addr]int{}}
	a.start = func(_ context.Context, spec responderSpec) responderHandle {
		r := testResponder(t, p, 1, time.Millisecond)
		r.spec.advertises, r.spec.announced = spec.advertises, spec.announced
		return r
	}
	return a, p, yields
}

// TestReleasingVIPAsksWhoAnswers: a VIP turning releasing makes this node
// ask who answers for it, and another host's answer ends the hand-over
// (that host answers already); for an owned VIP an answer is only
// recorded, for the fence's verification.
func TestReleasingVIPAsksWhoAnswers(t *testing.T) {
	a, p, yields := askingAnnouncer(t)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip4) })
	a.answered("eth0", vip4, otherMAC)
	s := a.owned.Load().state("eth0", vip4)
	if !a.owns("eth0", vip4) || !s.heard() {
		t.Fatalf("owned VIP: answering %v, answer recorded %v; want both", a.owns("eth0", vip4), s.heard())
	}
	if n := p.questions(vip4); n != 0 {
		t.Fatalf("%d questions about an owned VIP", n)
	}
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	labkit.Eventually(t, 5*time.Second, "a question about the VIP turned releasing", func() bool { return p.questions(vip4) > 0 })
	if !a.owned.Load().releasing("eth0", vip4) {
		t.Fatal("stopped answering before anyone answered")
	}
	a.answered("eth0", vip4, nil) // an advertisement without a MAC names no host
	if !a.owned.Load().releasing("eth0", vip4) {
		t.Fatal("yielded to an answer from an unknown host")
	}
	a.answered("eth0", vip4, otherMAC)
	expectYield(t, yields, vip4)
	if a.owns("eth0", vip4) {
		t.Fatal("still answered after another host answered")
	}
}

// TestReleasingVIPTellsTheLoser: a host that lost the fence for a VIP to
// this node's claim, but read that claim only once this node was handing
// the VIP over, tells this node (an announcement to its MAC alone); this
// node tells it back that it gave the VIP up, once per FenceVerify, and
// keeps answering until that host announces the VIP.
func TestReleasingVIPTellsTheLoser(t *testing.T) {
	a, p, _ := askingAnnouncer(t)
	a.cfg.FenceVerify = time.Hour
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	a.noticeConflict("eth0", protoARP, vip4, ourMAC, otherMAC)
	want := []string{vip4.String() + " " + otherMAC.String()}
	labkit.Eventually(t, 5*time.Second, "the give-up sent to the loser", func() bool { return len(p.giveUps()) > 0 })
	a.noticeConflict("eth0", protoARP, vip4, ourMAC, otherMAC)
	if got := p.giveUps(); !slices.Equal(got, want) {
		t.Fatalf("give-ups %q, want %q (once per FenceVerify)", got, want)
	}
	if !a.owned.Load().releasing("eth0", vip4) {
		t.Fatal("stopped answering on the loser's word: it is silent")
	}
}

// TestNothingSentBeforeTheResponderOpens: a VIP that turns releasing while
// its interface's responder is still opening (this node had just claimed
// it, and the interface had no responder before) is asked about once the
// responder's sockets are open, and not before; nor is anything else sent
// from outside the responder's loops (a fence's re-assertion, the word to
// a fence's winner). Asking through an NDP socket not yet there would
// crash the speaker on a nil dereference.
func TestNothingSentBeforeTheResponderOpens(t *testing.T) {
	a, _, _, _, _ := releaseAnnouncer(t)
	p := &fakeProto{sent: map[netip.Addr]int{}}
	p.unopened.Store(true)
	started := make(chan *responder, 1)
	a.start = func(_ context.Context, spec responderSpec) responderHandle {
		r := testResponder(t, p, 1, time.Millisecond)
		r.ready = make(chan struct{}) // still opening
		r.spec.advertises, r.spec.announced = spec.advertises, spec.announced
		started <- r
		return r
	}
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	r := <-started
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	if !a.owned.Load().releasing("eth0", vip4) {
		t.Fatal("the VIP did not turn releasing")
	}
	a.reassert("eth0", protoARP, vip4)
	a.tellWinner("eth0", protoARP, vip4, otherMAC)
	// Before the fix the question left at once; give every goroutine
	// started above time to reach its first send.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := p.early.Load(); n > 0 {
			t.Fatalf("%d packets sent through sockets not open yet", n)
		}
	}
	p.unopened.Store(false)
	close(r.ready)
	labkit.Eventually(t, 5*time.Second, "the question once the responder opened", func() bool { return p.questions(vip4) > 0 })
	if n := p.early.Load(); n > 0 {
		t.Fatalf("%d packets sent through sockets not open yet", n)
	}
}
