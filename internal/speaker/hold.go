package speaker

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// announceHold is the state of the hold Lease (heraldv1.AnnounceHoldLease)
// as this speaker last acted on it.
type announceHold struct {
	held   bool
	holder string
	until  time.Time // zero: until the Lease is deleted
}

// holdOf reads a hold Lease: held while it exists, unless its duration has
// run out (measured from renewTime, else acquireTime, else creation).
func holdOf(l *coordinationv1.Lease, now time.Time) announceHold {
	if l == nil || l.DeletionTimestamp != nil {
		return announceHold{}
	}
	h := announceHold{held: true}
	if l.Spec.HolderIdentity != nil {
		h.holder = *l.Spec.HolderIdentity
	}
	if h.until = k8s.HoldUntil(l); !h.until.IsZero() {
		h.held = now.Before(h.until)
	}
	return h
}

// currentHold reads the hold Lease from its informer, logs when the hold
// starts or ends, and asks for a reconcile when a timed hold runs out.
func (s *Speaker) currentHold() bool {
	l, err := s.cluster.holdLeases.Get(heraldv1.AnnounceHoldLease)
	if err != nil {
		l = nil // not found: no hold
	}
	h := holdOf(l, s.opts.Now())
	if h.held && !h.until.IsZero() {
		s.queue.AddAfter(reconcileKey, h.until.Sub(s.opts.Now())+5*time.Millisecond)
	}
	if h.held != s.hold.held {
		if h.held {
			s.log.Warn("announcements held: answering no ARP/NDP and opening no BGP session while the Lease exists",
				"lease", s.opts.Namespace+"/"+heraldv1.AnnounceHoldLease, "holder", h.holder, "until", untilText(h.until))
		} else {
			s.log.Info("announcement hold released", "lease", s.opts.Namespace+"/"+heraldv1.AnnounceHoldLease)
		}
	}
	s.hold = h
	held := 0.0
	if h.held {
		held = 1
	}
	s.metrics.held.Set(held)
	return h.held
}

func untilText(t time.Time) string {
	if t.IsZero() {
		return "deleted"
	}
	return t.UTC().Format(time.RFC3339)
}
