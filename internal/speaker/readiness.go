package speaker

import (
	"sync/atomic"
	"time"
)

// bgpAttemptBound is how long after its first configuration a BGP session
// that has neither connected nor failed yet stops holding readiness back.
const bgpAttemptBound = 10 * time.Second

// readiness tracks what Ready needs.
type readiness struct {
	synced     atomic.Bool  // informer caches synced (and the member list started)
	reconciled atomic.Bool  // a decision was applied with a settled member list
	bgpFirst   atomic.Int64 // unix ns of the first BGP configuration; 0: none yet
}

// Ready says whether this speaker takes part: its caches synced, its
// member list settled, a decision applied, and (BGP) every session was
// attempted: connected, failed or refused, or configured long enough
// ago. It is false once shutting down. /readyz serves it, so a DaemonSet
// rollout waits for a speaker that really announces.
func (s *Speaker) Ready() bool {
	if !s.ready.synced.Load() || s.leaving.Load() || !s.ready.reconciled.Load() {
		return false
	}
	if ml := s.memberList(); ml != nil && !ml.Settled() {
		return false
	}
	return s.bgpAttempted()
}

func (s *Speaker) bgpAttempted() bool {
	if s.opts.BGP == nil {
		return true
	}
	first := s.ready.bgpFirst.Load()
	if first == 0 {
		return false
	}
	if s.opts.Now().Sub(time.Unix(0, first)) >= bgpAttemptBound {
		return true
	}
	for _, st := range s.opts.BGP.Sessions() {
		switch {
		case st.Error != "", st.LastError != "":
		case st.State == "Established", st.State == "OpenSent", st.State == "OpenConfirm", st.State == "Active":
		default:
			return false
		}
	}
	return true
}
