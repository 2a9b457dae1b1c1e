package layer2

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"

	"github.com/herald-lb/herald/internal/l2owner"
	"github.com/herald-lb/herald/test/labkit"
)

// pausingAnnouncer is askingAnnouncer with pause detection at after,
// whose heartbeat last ran ago (no heartbeat goroutine runs: the test
// moves the stamp).
func pausingAnnouncer(t *testing.T, after time.Duration) (*Announcer, *fakeProto, chan yieldCall) {
	t.Helper()
	a, p, yields := askingAnnouncer(t)
	a.pause.cfg = l2owner.Config{PauseAfter: after}
	a.pause.beat.Store(a.pause.ns(time.Now()))
	return a, p, yields
}

// stall makes the heartbeat's stamp d old, as after a stall of d.
func stall(a *Announcer, d time.Duration) { a.pause.beat.Store(a.pause.ns(time.Now().Add(-d))) }

// TestPausedOwnerDefersThenClaims: after a pause longer than PauseAfter
// the owner answers nothing and asks who answers; a speaker that answers
// is deferred to (the fence, lost to it) until it asks who answers the
// VIP itself (it hands it over), and then this node announces and
// answers again.
func TestPausedOwnerDefersThenClaims(t *testing.T) {
	a, p, _ := pausingAnnouncer(t, 240*time.Millisecond)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip4) })
	stall(a, 8*time.Second)
	a.awake()
	if a.owns("eth0", vip4) || a.owned.Load().advertises("eth0", vip4) {
		t.Fatal("answered or advertised right after a pause")
	}
	labkit.Eventually(t, 5*time.Second, "a question after the pause", func() bool { return p.questions(vip4) > 0 })
	a.answered("eth0", vip4, otherMAC)
	s := a.owned.Load().state("eth0", vip4)
	if w := s.fenceWinner(time.Now()); !bytes.Equal(w, otherMAC) {
		t.Fatalf("deferred to %v, want %v", w, otherMAC)
	}
	if a.owns("eth0", vip4) {
		t.Fatal("answered while another speaker answers")
	}
	a.asked("eth0", vip4, ourMAC) // not the host deferred to
	if a.owns("eth0", vip4) {
		t.Fatal("claimed on another host's question")
	}
	sent := p.count(vip4)
	a.asked("eth0", vip4, otherMAC)
	labkit.Eventually(t, 5*time.Second, "answered again from its announcement", func() bool {
		return a.owns("eth0", vip4) && p.count(vip4) > sent
	})
	s.own.mu.Lock()
	phase := s.own.m.Phase()
	s.own.mu.Unlock()
	if phase != l2owner.Owner {
		t.Fatalf("the pause is dealt with, its machine is %v", phase)
	}
}

// TestStarvedOwnerKeepsAnswering: a stall no longer than PauseAfter
// changes nothing; a longer one that nobody took advantage of (no host
// answers the question) costs AskFor of silence, and the owner answers
// again.
func TestStarvedOwnerKeepsAnswering(t *testing.T) {
	a, p, _ := pausingAnnouncer(t, 240*time.Millisecond)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip4) })
	stall(a, 200*time.Millisecond)
	a.awake()
	if !a.owns("eth0", vip4) || p.questions(vip4) != 0 {
		t.Fatal("a stall shorter than PauseAfter silenced the owner")
	}
	stall(a, 400*time.Millisecond)
	silenced := time.Now()
	a.awake()
	if a.owns("eth0", vip4) {
		t.Fatal("answered right after a stall longer than PauseAfter")
	}
	labkit.Eventually(t, 5*time.Second, "answered again when nobody else does", func() bool { return a.owns("eth0", vip4) })
	if d := time.Since(silenced); d < l2owner.AskFor {
		t.Fatalf("answered again %v after the stall, before AskFor %v", d, l2owner.AskFor)
	}
	labkit.Eventually(t, 5*time.Second, "two questions (at once and halfway)", func() bool { return p.questions(vip4) == 2 })
}

// TestPausedReleasingYields: a VIP being handed over when the pause came
// is yielded to the speaker that answers it; one whose decision turns
// releasing while it asks stays silent until the answer.
func TestPausedReleasingYields(t *testing.T) {
	a, _, yields := pausingAnnouncer(t, 240*time.Millisecond)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip4) })
	stall(a, time.Second)
	a.awake()
	a.SetAnnouncements([]Announcement{{IP: vip4, Releasing: true}})
	if a.owns("eth0", vip4) {
		t.Fatal("a VIP turned releasing while asking answers again")
	}
	a.foreignAnnouncement("eth0", protoARP, vip4, ourMAC, otherMAC)
	expectYield(t, yields, vip4)
	if a.owns("eth0", vip4) {
		t.Fatal("answered after the new owner announced itself")
	}
}

// TestPausedOwnerIgnoresForeignHost: once the speakers' MACs are known, a
// host that is none of them answering after a pause is not deferred to.
func TestPausedOwnerIgnoresForeignHost(t *testing.T) {
	a, _, _ := pausingAnnouncer(t, 240*time.Millisecond)
	a.SetSpeakerMACs(nil, true)
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	labkit.Eventually(t, 5*time.Second, "answered from its first announcement", func() bool { return a.owns("eth0", vip4) })
	stall(a, time.Second)
	a.awake()
	a.answered("eth0", vip4, otherMAC)
	if a.owned.Load().state("eth0", vip4).fenced(time.Now()) {
		t.Fatal("deferred to a host that runs no speaker")
	}
	labkit.Eventually(t, 5*time.Second, "answered again", func() bool { return a.owns("eth0", vip4) })
}

// TestARPReadChecksForAPauseFirst: the pause check runs before a frame
// is handled, so a request read right after a resume (queued during the
// pause) finds the VIP silenced; and another host's ARP probe for a VIP
// is reported as that host asking who answers it.
func TestARPReadChecksForAPauseFirst(t *testing.T) {
	p, conn, sender, _ := testARPProto(t)
	silenced := false
	p.spec.awake = func() { silenced = true }
	p.spec.owns = func(vip netip.Addr) bool { return vip == vip4 && !silenced }
	var asked []string
	p.spec.asked = func(vip netip.Addr, by net.HardwareAddr) { asked = append(asked, vip.String()+" "+by.String()) }
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	conn.frames = [][]byte{
		arpFrame(t, arpPacket(t, arp.OperationRequest, clientMAC, client4, zero, vip4), ethernet.Broadcast),
		arpFrame(t, arpPacket(t, arp.OperationRequest, otherMAC, netip.IPv4Unspecified(), zero, vip4), ethernet.Broadcast),
	}
	buf := make([]byte, arpReadBuffer)
	for range 2 {
		if err := p.readOne(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
	}
	if len(sender.replies) != 0 {
		t.Errorf("%d replies sent for a VIP the pause check silenced", len(sender.replies))
	}
	if want := vip4.String() + " " + otherMAC.String(); len(asked) != 1 || asked[0] != want {
		t.Errorf("asked %q, want [%s]", asked, want)
	}
}
