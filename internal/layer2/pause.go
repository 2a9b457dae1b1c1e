package layer2

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// A paused process. When every process of the node was stopped for a
// while (a VM pause, a live migration), the other nodes took its VIPs over,
// and on resume this node, whose view never changed, would answer side by
// side with them. So a heartbeat goroutine stamps a monotonic time every
// Config.PauseAfter / l2owner.HeartbeatsPerPause, and the read path (every frame
// read) and the send path of announcements compare the stamp with the
// clock: a stamp older than PauseAfter means this process was not
// scheduled for that long. Frames queued during the pause are read the
// moment it resumes, possibly before the heartbeat runs again, so the
// check is on that path itself. Every announced VIP is then fed the pause
// by its ownership machine (internal/l2owner), which silences it, asks who
// answers it, and defers to a speaker that does or claims it again
// (make-before-break); see that package for the rule.

// pauseWatch detects that this process was not scheduled for longer than
// Config.PauseAfter.
type pauseWatch struct {
	cfg l2owner.Config
	// epoch is the monotonic origin of beat; beat (ns since epoch) is
	// when the heartbeat last ran, 0 while none runs.
	epoch time.Time
	beat  atomic.Int64
	// mu is held while a pause is handled: a goroutine that sees the
	// stale stamp waits until every VIP is silenced.
	mu sync.Mutex
}

func (w *pauseWatch) at(ns int64) time.Time { return w.epoch.Add(time.Duration(ns)) }
func (w *pauseWatch) ns(t time.Time) int64  { return int64(t.Sub(w.epoch)) }

// heartbeat stamps the time until ctx ends.
func (a *Announcer) heartbeat(ctx context.Context) {
	w := &a.pause
	every := w.cfg.PauseAfter / l2owner.HeartbeatsPerPause
	w.beat.Store(w.ns(time.Now()))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.beat.Store(0)
			return
		case <-t.C:
		}
		now := time.Now()
		last := w.beat.Load()
		if last == 0 || w.cfg.Paused(w.at(last), now) {
			a.awake()
			continue
		}
		// A failed swap: a pause was handled meanwhile, with a newer stamp.
		w.beat.CompareAndSwap(last, w.ns(now))
	}
}

// awake checks that this process was not paused since the heartbeat last
// ran; if it was, every announced VIP is handled as paused before it
// returns. Called for every frame read and every announcement sent.
func (a *Announcer) awake() {
	w := &a.pause
	last := w.beat.Load()
	if last == 0 || !w.cfg.Paused(w.at(last), time.Now()) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	last = w.beat.Load()
	if last == 0 || !w.cfg.Paused(w.at(last), now) {
		return // handled by another goroutine meanwhile
	}
	gap := now.Sub(w.at(last))
	n := a.pausedAll(now, gap)
	w.beat.Store(w.ns(now))
	a.metrics.pauses.Inc()
	a.log.Warn("this process was not scheduled for longer than the member list's quickest detection: "+
		"answering nothing for its VIPs until it knows who answers them", "gap", gap.Round(time.Millisecond), "threshold", w.cfg.PauseAfter, "silenced", n)
}

// pausedAll feeds the pause to the machine of every announced VIP and
// returns how many went silent.
func (a *Announcer) pausedAll(now time.Time, gap time.Duration) int {
	ev := l2owner.Event{Kind: l2owner.Pause, At: now, Gap: gap}
	sk := &sink{asks: map[responderKey][]netip.Addr{}}
	n := 0
	for _, vips := range *a.owned.Load() {
		for _, s := range vips {
			o := s.own
			o.mu.Lock()
			if !o.dropped && o.s == s {
				a.stepLocked(o, nil, ev, sk)
				if o.m.Phase() == l2owner.Asking {
					n++
				}
			}
			o.mu.Unlock()
		}
	}
	for k, vips := range sk.asks {
		a.askAll(k, vips)
	}
	return n
}
