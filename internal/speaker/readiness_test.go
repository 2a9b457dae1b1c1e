package speaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-lb/herald/internal/bgp"
)

// fakeBGP reports the sessions the test sets.
type fakeBGP struct{ sessions []bgp.SessionState }

func (f *fakeBGP) ApplyChange(context.Context, bgp.Change) error { return nil }
func (f *fakeBGP) Sessions() []bgp.SessionState                  { return f.sessions }
func (f *fakeBGP) Shutdown(context.Context) error                { return nil }

// TestReadyOnlyWhenTakingPart: not Ready before the caches synced, before
// the member list settled and a decision was applied, before every BGP
// session was attempted (or the bound passed), nor while leaving.
func TestReadyOnlyWhenTakingPart(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &fakeMembers{}
	s, _ := livenessSpeaker(t, &now, ml)
	b := &fakeBGP{sessions: []bgp.SessionState{{Name: "router", State: "Idle"}}}
	s.bgp = &bgpReconciler{backend: b}
	s.ready.synced.Store(false)
	step := func(what string, want bool) {
		t.Helper()
		if got := s.Ready(); got != want {
			t.Errorf("%s: Ready=%v, want %v", what, got, want)
		}
	}
	step("not synced", false)
	s.ready.synced.Store(true)
	step("synced, no decision", false)
	s.ready.reconciled.Store(true)
	step("member list not settled", false)
	ml.settled = true
	step("BGP never configured", false)
	s.bgp.first.Store(now.UnixNano())
	step("BGP session idle", false)
	b.sessions[0].State = "Active"
	step("BGP session attempted", true)
	b.sessions[0].State = "Connect"
	now = now.Add(bgpAttemptBound)
	step("BGP session still connecting after the bound", true)
	setErr(&s.ready.reconcileErr, "reconcile failing (retried with backoff)", errors.New("reading state: boom"))
	if r := s.NotReadyReason(); r != "reconcile failing (retried with backoff): reading state: boom" {
		t.Errorf("reconcile failing: NotReadyReason = %q", r)
	}
	setErr(&s.ready.reconcileErr, "", nil)
	setErr(&s.ready.leaseErr, "liveness Lease not renewed", errors.New("forbidden"))
	step("liveness Lease not renewed", false)
	setErr(&s.ready.leaseErr, "", nil)
	step("reconciled and renewed again", true)
	s.leaving.Store(true)
	step("leaving", false)
}
