package layer2

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// DefaultFailAfter is how long a socket of the announcer (a responder's
// packet socket, the netlink subscription) may fail without one success
// before the announcer reports itself failed (Failure).
const DefaultFailAfter = 15 * time.Second

// failMinCount is the least number of failures in such a run: one failure
// long ago followed by silence is not a socket that keeps failing.
const failMinCount = 3

// trouble is the current run of failures of one socket: since its first
// failure, without a success in between.
type trouble struct {
	mu    sync.Mutex
	since time.Time // zero: no failure since the last success
	count int
	last  error
}

// fail records a failure at now.
func (t *trouble) fail(now time.Time, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 {
		t.since = now
	}
	t.count++
	t.last = err
}

// ok records a success: the run ends.
func (t *trouble) ok() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.since, t.count, t.last = time.Time{}, 0, nil
}

// failing returns the last error when the run is a failure at now.
func (t *trouble) failing(now time.Time, after time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !failedLongEnough(t.since, t.count, now, after) {
		return nil
	}
	return fmt.Errorf("failing for %s (%d times, no success in between): %w", now.Sub(t.since).Round(time.Second), t.count, t.last)
}

// failedLongEnough decides whether a run of count failures since since is
// a failure at now: it lasted after, with at least failMinCount failures.
func failedLongEnough(since time.Time, count int, now time.Time, after time.Duration) bool {
	return count >= failMinCount && !since.IsZero() && now.Sub(since) >= after
}

// linkGone says whether a socket error only means that its link is down or
// gone: the announcer follows links and closes or reopens the responder,
// so it is no failure of the socket.
func linkGone(err error) bool {
	return errors.Is(err, syscall.ENETDOWN) || errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ENODEV)
}

// opKind is what a responder does with its sockets; each has its own run
// of failures: a socket that reads but cannot send answers nothing.
type opKind int

const (
	opKindOpen opKind = iota
	opKindRead
	opKindSend
	opKinds
)

var opKindNames = [opKinds]string{"open", "read", "send"}

// socketTroubles are a responder's runs of failures, per opKind.
type socketTroubles [opKinds]trouble

// failing returns the first run that is a failure at now.
func (t *socketTroubles) failing(now time.Time, after time.Duration) error {
	for k := range opKinds {
		if err := t[k].failing(now, after); err != nil {
			return fmt.Errorf("%s %w", opKindNames[k], err)
		}
	}
	return nil
}

// socketFailed records a responder socket's error, unless its link is
// merely down or gone.
func (s responderSpec) socketFailed(k opKind, err error) {
	if s.troubles == nil || err == nil || linkGone(err) {
		return
	}
	s.troubles[k].fail(time.Now(), err)
}

// socketWorked records a responder socket's success.
func (s responderSpec) socketWorked(k opKind) {
	if s.troubles != nil {
		s.troubles[k].ok()
	}
}

// Failure returns why the announcer stopped working, or nil: one of its
// responders' sockets (opening it, reading or sending ARP/NDP) or its
// netlink subscription has failed for Config.FailAfter, at least three
// times, without one success in between. Such a node cannot answer for
// the addresses it owns: the caller should stop (and hand them over), so
// that it is restarted. A link that is down or gone is no failure.
func (a *Announcer) Failure() error {
	now := time.Now()
	if err := a.netlink.failing(now, a.cfg.FailAfter); err != nil {
		return fmt.Errorf("netlink subscription: %w", err)
	}
	running := a.running.Load()
	if running == nil {
		return nil
	}
	for _, k := range sortedKeys(*running) {
		if err := (*running)[k].troubles.failing(now, a.cfg.FailAfter); err != nil {
			return fmt.Errorf("interface %s, %s socket: %w", k.iface, k.proto, err)
		}
	}
	return nil
}
