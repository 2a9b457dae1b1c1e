package daemon

import (
	"context"
	"errors"
	"time"
)

// permanentError marks an error that cannot resolve by itself.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as a condition that cannot resolve by itself (a
// malformed key, a port taken by another program): retrying is pointless,
// and the process should exit non-zero with it, so that the kubelet
// restarts it with backoff and the operator sees CrashLoopBackOff and the
// reason. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent says whether err, or an error it wraps, was marked
// Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// Backoff is a doubling delay between Initial and Max.
type Backoff struct{ Initial, Max time.Duration }

// Delay is the wait after the attempt-th failure (1 for the first).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Sleep waits for d or until ctx ends; false when ctx ended. It is Retry's
// default clock; tests pass a simulated one.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Retry runs attempt until it succeeds, returns an error marked Permanent
// (returned as is), or ctx ends (ctx's error). Any other error is a
// condition that resolves by itself: Retry tells waiting (the error, how
// many attempts failed so far, the delay before the next) and tries again
// after b's delay, forever. sleep is the clock (nil: Sleep).
func Retry(ctx context.Context, b Backoff, sleep func(context.Context, time.Duration) bool,
	attempt func(context.Context) error, waiting func(err error, failed int, next time.Duration)) error {
	if sleep == nil {
		sleep = Sleep
	}
	for failed := 1; ; failed++ {
		err := attempt(ctx)
		switch {
		case err == nil:
			return nil
		case IsPermanent(err):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		d := b.Delay(failed)
		if waiting != nil {
			waiting(err, failed, d)
		}
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}
