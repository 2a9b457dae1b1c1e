package speaker

import (
	"time"

	"github.com/herald-lb/herald/internal/announce"
)

// DefaultGracefulShutdownWait is how long a draining or stopping node
// keeps its BGP paths, sent with GRACEFUL_SHUTDOWN, before it withdraws
// them: long enough for a router to run its best-path selection again
// and move new flows to the other nodes (FRR: well under a second).
const DefaultGracefulShutdownWait = 5 * time.Second

// bgpDrain is what the speaker knows of its own node's drain label.
type bgpDrain struct {
	known    bool      // a reconcile has read the node
	draining bool      // the node carries herald.dev/drain
	since    time.Time // when this speaker saw the label appear; zero: it was there at start
}

// drainStep decides, at each reconcile, whether the node's BGP paths go
// out with GRACEFUL_SHUTDOWN (the node still announces them as if
// eligible) and after how long to reconcile again to withdraw them. The
// wait starts when this speaker sees the label appear; a node labelled
// before its speaker started withdraws at once (it drained before, or
// its speaker restarted mid-drain: sending paths again would draw flows
// back). Removing the label ends the drain.
func drainStep(prev bgpDrain, draining bool, now time.Time, wait time.Duration) (next bgpDrain, gshut bool, recheck time.Duration) {
	next = bgpDrain{known: true, draining: draining}
	switch {
	case !draining:
		return next, false, 0
	case !prev.known:
		return next, false, 0
	case !prev.draining:
		next.since = now
	default:
		next.since = prev.since
	}
	if next.since.IsZero() || wait <= 0 {
		return next, false, 0
	}
	if left := next.since.Add(wait).Sub(now); left > 0 {
		return next, true, left
	}
	return next, false, 0
}

// drainGracefully steps this node's drain (drainStep) and says whether
// its BGP paths are in the graceful-shutdown wait; when they are, it asks
// for the reconcile that withdraws them. Call with b.mu held.
func (b *bgpReconciler) drainGracefully() bool {
	me, err := b.nodes.Get(b.node)
	if err != nil {
		return false // ownAddresses reported it
	}
	draining := announce.Draining(me.Labels)
	next, gshut, recheck := drainStep(b.drain, draining, b.now(), b.drainWait)
	if next.draining != b.drain.draining && b.drain.known {
		b.log.Info("drain label changed", "draining", draining, "for", b.drainWait)
	}
	b.drain = next
	if gshut && b.reconcileAfter != nil {
		b.reconcileAfter(recheck + 5*time.Millisecond)
	}
	return gshut
}
