package labkit

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// How often Eventually (tests: a condition is cheap and its timing is
// measured) and Poll (library code: a condition may ask a daemon or the
// API server) check their condition.
const (
	eventuallyInterval = 20 * time.Millisecond
	pollInterval       = 100 * time.Millisecond
)

// Eventually checks cond every 20 ms until it holds and returns how long
// that took; it fails t if d passes first.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return EventuallyWhy(t, d, what, func() (bool, string) { return cond(), "" })
}

// EventuallyWhy is Eventually for a condition that also says what it saw:
// the last such message is part of the failure.
func EventuallyWhy(t testing.TB, d time.Duration, what string, cond func() (ok bool, saw string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, saw := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > d {
			if saw != "" {
				t.Fatalf("timed out after %s waiting for %s: %s", d, what, saw)
			}
			t.Fatalf("timed out after %s waiting for %s", d, what)
			return 0
		}
		time.Sleep(eventuallyInterval)
	}
}

// Poll is Eventually for code that is not a test: it checks cond every
// 100 ms until it holds (nil), returns an error (that error), d passes or
// ctx ends.
func Poll(ctx context.Context, d time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done after %s", what, d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
