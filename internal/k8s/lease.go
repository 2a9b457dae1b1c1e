package k8s

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeaseFresh says whether a Lease was renewed within its duration at now.
// It compares the writer's clock with the reader's: nodes must keep their
// clocks within a few seconds (NTP), as for every Lease consumer that
// reads renewTime.
func LeaseFresh(l *coordinationv1.Lease, now time.Time) bool {
	if l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// LeaseExpiry is when a Lease stops being fresh (zero when it never was).
func LeaseExpiry(l *coordinationv1.Lease) time.Time {
	if l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
}

// HoldUntil is when a hold Lease (one that holds while it exists, such as
// the speakers' announcement hold) stops holding: renewTime, else
// acquireTime, else its creation, plus leaseDurationSeconds. Zero when it
// has no duration: it holds until deleted.
func HoldUntil(l *coordinationv1.Lease) time.Time {
	if l == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	from := l.CreationTimestamp.Time
	switch {
	case l.Spec.RenewTime != nil:
		from = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		from = l.Spec.AcquireTime.Time
	}
	return from.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
}
