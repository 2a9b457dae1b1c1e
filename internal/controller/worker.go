package controller

import (
	"context"
	"errors"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-lb/herald/internal/leader"
)

// reported marks an error whose story is already told on the Service
// (a Warning event written by publish): the handler does not repeat it.
type reported struct{ error }

func (r reported) Unwrap() error { return r.error }

// processNext handles one key of a queue: Forget on success; on error, the
// one error handler (handleError) and a rate-limited requeue. It returns
// false when the queue shuts down.
func processNext[T comparable](ctx context.Context, c *Controller, queue string, q workqueue.TypedRateLimitingInterface[T], sync func(context.Context, T) error) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	if any(q) == any(c.serviceQueue) && q.Len() == 0 {
		c.servicesIdle.broadcast()
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		c.handleError(ctx, queue, key, err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// handleError logs a failed sync with its object, counts it by reason
// (herald_controller_sync_errors_total) and, for a Service, records a
// Warning event.
func (c *Controller) handleError(ctx context.Context, queue string, key any, err error) {
	reason := syncErrorReason(err)
	name, isService := key.(cache.ObjectName)
	if isService {
		if _, gerr := c.services.Services(name.Namespace).Get(name.Name); apierrors.IsNotFound(gerr) {
			reason = "Gone" // deleted while we wrote: the next sync releases it
		}
	}
	c.metrics.syncErrors.WithLabelValues(reason).Inc()
	level := slog.LevelError
	switch {
	case ctx.Err() != nil || reason == "NotLeader":
		level = slog.LevelInfo
	case reason == "Conflict" || reason == "Allocation" || reason == "Gone":
		level = slog.LevelDebug // the object changed under us / already told in an event
	}
	c.log.Log(context.Background(), level, "sync failed; retrying with backoff", "queue", queue, "object", keyString(key), "reason", reason, "error", err)
	if !isService || ctx.Err() != nil || reason == "NotLeader" || reason == "Conflict" || reason == "Gone" || errors.As(err, new(reported)) {
		return
	}
	if svc, gerr := c.services.Services(name.Namespace).Get(name.Name); gerr == nil {
		c.rec.Eventf(svc, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", err)
	}
}

// syncErrorReason is the metric label of a sync error.
func syncErrorReason(err error) string {
	switch {
	case errors.Is(err, leader.ErrNotLeader):
		return "NotLeader"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "Timeout"
	case errors.As(err, new(reported)):
		return "Allocation"
	case apierrors.IsConflict(err):
		return "Conflict"
	}
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "Other"
}

func keyString(key any) string {
	switch k := key.(type) {
	case cache.ObjectName:
		return k.String()
	case string:
		return k
	}
	return ""
}
