package layer2

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFailedLongEnough(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		since time.Time
		count int
		now   time.Time
		want  bool
	}{
		{time.Time{}, 0, t0, false},                   // no failure
		{t0, 3, t0.Add(14 * time.Second), false},      // not long enough
		{t0, 3, t0.Add(15 * time.Second), true},       // long enough, often enough
		{t0, 2, t0.Add(time.Hour), false},             // once long ago, then nothing tried
		{t0, 100, t0.Add(time.Second), false},         // a burst of failures
		{t0, failMinCount, t0.Add(time.Minute), true}, // a socket failing every 20 s
	} {
		if got := failedLongEnough(c.since, c.count, c.now, 15*time.Second); got != c.want {
			t.Errorf("failedLongEnough(+%s, %d) = %v, want %v", c.now.Sub(c.since), c.count, got, c.want)
		}
	}
}

// announcerWith returns an announcer running one responder on eth0 (ARP),
// without sockets: its runs of failures are filled by the test.
func announcerWith(t *testing.T) (*Announcer, *responder) {
	t.Helper()
	a, err := New(Config{FailAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &responder{}
	r.spec = responderSpec{troubles: &r.troubles}
	a.running.Store(&map[responderKey]*responder{{iface: "eth0", proto: protoARP}: r})
	return a, r
}

// TestFailureNamesTheSocket: sends failing for FailAfter make the
// announcer failed, naming the interface, the protocol, what failed and
// the error; reads that work meanwhile do not hide it (a socket that reads
// but cannot send answers nothing); one send that works ends it.
func TestFailureNamesTheSocket(t *testing.T) {
	a, r := announcerWith(t)
	enobufs := fmt.Errorf("sendto: %w", syscall.ENOBUFS)
	start := time.Now().Add(-2 * time.Second)
	for i := range 3 {
		r.troubles[opKindSend].fail(start.Add(time.Duration(i)*time.Second/2), enobufs)
		r.spec.socketWorked(opKindRead)
	}
	err := a.Failure()
	if err == nil || !errors.Is(err, syscall.ENOBUFS) || !strings.HasPrefix(err.Error(), "interface eth0, arp socket: send failing for 2s (3 times, no success in between): sendto:") {
		t.Fatalf("Failure = %v", err)
	}
	r.spec.socketWorked(opKindSend)
	if err := a.Failure(); err != nil {
		t.Fatalf("Failure = %v after a send worked, want nil", err)
	}
}

// TestFailureIgnoresLinkDown: errors that say the link is down or gone
// are the announcer's to follow, not a failure of the socket.
func TestFailureIgnoresLinkDown(t *testing.T) {
	a, r := announcerWith(t)
	for range 10 {
		r.spec.socketFailed(opKindSend, fmt.Errorf("sendto: %w", syscall.ENETDOWN))
		r.spec.socketFailed(opKindRead, syscall.ENXIO)
	}
	if r.troubles[opKindSend].count != 0 || r.troubles[opKindRead].count != 0 || a.Failure() != nil {
		t.Fatalf("link-down errors were counted: %v", a.Failure())
	}
	r.spec.socketFailed(opKindOpen, syscall.EPERM)
	if r.troubles[opKindOpen].count != 1 {
		t.Fatal("an open refused was not counted")
	}
}

// TestFailureNetlink: the netlink subscription failing for FailAfter is a
// failure; a relist that works ends it.
func TestFailureNetlink(t *testing.T) {
	a, _ := announcerWith(t)
	start := time.Now().Add(-time.Minute)
	for i := range 4 {
		a.netlink.fail(start.Add(time.Duration(i)*time.Second), errors.New("subscribe to links: too many open files"))
	}
	if err := a.Failure(); err == nil || !strings.HasPrefix(err.Error(), "netlink subscription: failing for 1m0s (4 times") {
		t.Fatalf("Failure = %v", err)
	}
	a.netlink.ok()
	if err := a.Failure(); err != nil {
		t.Fatalf("Failure = %v", err)
	}
}
