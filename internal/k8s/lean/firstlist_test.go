package lean

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scriptedList returns the errors in order, then a list.
func scriptedList(errs ...error) (func() (runtime.Object, error), *int) {
	calls := 0
	return func() (runtime.Object, error) {
		calls++
		if calls <= len(errs) {
			return nil, errs[calls-1]
		}
		return &corev1.ServiceList{}, nil
	}, &calls
}

var services = schema.GroupResource{Resource: "services"}

// TestFirstListRetriesRefusals: before the first successful list a
// refusal an administrator fixes is retried inside the list; any other
// error, and every error after the first success, goes to the reflector.
func TestFirstListRetriesRefusals(t *testing.T) {
	ctx := context.Background()
	f := &firstList{kind: "*v1.Service", log: slog.New(slog.DiscardHandler), every: time.Millisecond}
	forbidden := apierrors.NewForbidden(services, "", errors.New("RBAC: no rule"))
	list, calls := scriptedList(forbidden, apierrors.NewUnauthorized("expired"), apierrors.NewNotFound(services, ""), forbidden)
	if obj, err := f.list(ctx, list); err != nil || obj == nil || *calls != 5 {
		t.Fatalf("first list: %v %v after %d calls; want a list after 5", obj, err, *calls)
	}
	list, calls = scriptedList(forbidden)
	if _, err := f.list(ctx, list); !apierrors.IsForbidden(err) || *calls != 1 {
		t.Fatalf("after the first success: %v after %d calls; want the refusal at once", err, *calls)
	}

	f = &firstList{kind: "*v1.Service", log: slog.New(slog.DiscardHandler), every: time.Millisecond}
	timeout := apierrors.NewTimeoutError("busy", 1)
	list, calls = scriptedList(timeout)
	if _, err := f.list(ctx, list); !apierrors.IsTimeout(err) || *calls != 1 {
		t.Fatalf("another error: %v after %d calls; want it at once", err, *calls)
	}
}

// TestFirstListEndsWithItsContext: a refused first list returns the
// refusal when the informer stops.
func TestFirstListEndsWithItsContext(t *testing.T) {
	f := &firstList{kind: "*v1.Service", log: slog.New(slog.DiscardHandler), every: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.list(ctx, func() (runtime.Object, error) {
			return nil, apierrors.NewForbidden(services, "", errors.New("RBAC: no rule"))
		})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !apierrors.IsForbidden(err) {
			t.Fatalf("got %v, want the refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the list did not end with its context")
	}
}
