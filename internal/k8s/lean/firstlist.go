package lean

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// An informer that has never listed its kind cannot sync, and a speaker
// that has not synced stays unready: a rollout stops at it. When the list
// is refused for a reason the cluster's administrator fixes (a missing
// RBAC rule, a CRD not installed yet), client-go's reflector retries
// after a backoff that doubles from 0.8 s to 30 s (with as much jitter),
// so the speaker noticed the fix up to about a minute late (e2e/l2's
// TestSpeakerRollingUpdate, then called TestSpeakerCannotSyncStopsRollout:
// the rollout completed 39.7 s after
// the RBAC fix, of which 30 s are the DaemonSet's minReadySeconds). Until an
// informer's first list has succeeded, firstList retries such a refusal
// itself every firstListRetry instead. From the first success on, every
// error goes to the reflector as before: a synced informer whose
// permission is revoked backs off as client-go does, so a cluster's
// speakers do not all list every few seconds.

// firstListRetry is how often firstList tries a refused first list again.
const firstListRetry = 2 * time.Second

// refusalLogEvery is how often firstList logs that the list is still
// refused.
const refusalLogEvery = 30 * time.Second

// firstList is the retry of an informer's first list.
type firstList struct {
	kind  string
	log   *slog.Logger
	every time.Duration
	done  atomic.Bool
}

// list calls list until it succeeds, fails otherwise than by a refusal
// (refusedUntilFixed), ctx ends, or (once a list has succeeded) at once.
func (f *firstList) list(ctx context.Context, list func() (runtime.Object, error)) (runtime.Object, error) {
	var since, logged time.Time
	for {
		obj, err := list()
		switch {
		case err == nil:
			if f.done.CompareAndSwap(false, true) && !since.IsZero() {
				f.log.Info("listed at last, after refusals", "kind", f.kind, "refusedFor", time.Since(since).Round(time.Millisecond))
			}
			return obj, nil
		case f.done.Load() || !refusedUntilFixed(err):
			return obj, err
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		if now.Sub(logged) >= refusalLogEvery {
			f.log.Warn("cannot list, retrying until allowed", "kind", f.kind, "error", err, "every", f.every, "refusedFor", now.Sub(since).Round(time.Second))
			logged = now
		}
		t := time.NewTimer(f.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return obj, err
		case <-t.C:
		}
	}
}

// refusedUntilFixed says whether err is the API server refusing a list
// until an administrator acts: the client's identity not allowed
// (Forbidden, Unauthorized) or the kind unknown (NotFound: its CRD not
// installed yet).
func refusedUntilFixed(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
}
