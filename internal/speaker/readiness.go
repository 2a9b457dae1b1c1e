package speaker

import (
	"sync/atomic"
	"time"
)

// Reasons NotReadyReason gives before the speaker takes part.
const (
	notReadyLeaving    = "shutting down"
	notReadyNotSynced  = "caches not synced or member list not started"
	notReadyNoDecision = "no decision applied yet"
	notReadyUnsettled  = "member list not settled"
	notReadyBGP        = "BGP sessions not attempted yet"
)

// bgpAttemptBound is how long after its first configuration a BGP session
// that has neither connected nor failed yet stops holding readiness back.
const bgpAttemptBound = 10 * time.Second

// readiness tracks what Ready needs.
type readiness struct {
	synced     atomic.Bool // informer caches synced (and the member list started)
	reconciled atomic.Bool // a decision was applied with a settled member list
	// The errors of background work that keeps failing, retried with
	// backoff: not only logged, they make the speaker not Ready with
	// them as the reason until the work succeeds again.
	reconcileErr atomic.Pointer[string] // the last reconcile failed
	leaseErr     atomic.Pointer[string] // the last liveness Lease renewal failed
}

// setErr stores "what: err", or clears it when err is nil.
func setErr(p *atomic.Pointer[string], what string, err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	r := what + ": " + err.Error()
	p.Store(&r)
}

// Ready says whether this speaker takes part: its caches synced, its
// member list settled, a decision applied, and (BGP) every session was
// attempted: connected, failed or refused, or configured long enough
// ago. It is false once shutting down. /readyz serves it, so a DaemonSet
// rollout waits for a speaker that really announces.
func (s *Speaker) Ready() bool { return s.NotReadyReason() == "" }

// NotReadyReason says why the speaker is not Ready; "" when it is. Besides
// the conditions of Ready, a reconcile or a renewal of its liveness Lease
// that failed (both retried with backoff) keeps it not Ready, with the
// error, until one succeeds.
func (s *Speaker) NotReadyReason() string {
	switch {
	case s.leaving.Load():
		return notReadyLeaving
	case !s.ready.synced.Load():
		return notReadyNotSynced
	case !s.ready.reconciled.Load():
		return notReadyNoDecision
	}
	if !s.liveness.settled() {
		return notReadyUnsettled
	}
	if !s.bgpAttempted() {
		return notReadyBGP
	}
	for _, p := range []*atomic.Pointer[string]{&s.ready.reconcileErr, &s.ready.leaseErr} {
		if r := p.Load(); r != nil {
			return *r
		}
	}
	return ""
}

func (s *Speaker) bgpAttempted() bool {
	if s.bgp == nil {
		return true
	}
	first := s.bgp.firstApply()
	if first.IsZero() {
		return false
	}
	if s.opts.Now().Sub(first) >= bgpAttemptBound {
		return true
	}
	for _, st := range s.bgp.backend.Sessions() {
		switch {
		case st.Error != "", st.LastError != "":
		case st.State == "Established", st.State == "OpenSent", st.State == "OpenConfirm", st.State == "Active":
		default:
			return false
		}
	}
	return true
}
