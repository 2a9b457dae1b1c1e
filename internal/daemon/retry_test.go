package daemon

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second}
	for _, c := range []struct {
		attempt int
		want    time.Duration
	}{{1, 250 * time.Millisecond}, {2, 500 * time.Millisecond}, {3, time.Second}, {5, 4 * time.Second}, {6, 5 * time.Second}, {1000, 5 * time.Second}} {
		if got := b.Delay(c.attempt); got != c.want {
			t.Errorf("Delay(%d) = %s, want %s", c.attempt, got, c.want)
		}
	}
}

// simClock is a simulated clock: sleeping advances it at once.
type simClock struct{ now time.Duration }

func (c *simClock) sleep(ctx context.Context, d time.Duration) bool {
	c.now += d
	return ctx.Err() == nil
}

// TestRetryHasNoGiveUp: a condition that resolves by itself is retried
// for as long as it takes (here 20 minutes of simulated time, four times
// the 5 minutes the speaker used to give up after), with the waits
// reported, and Retry returns nil once it resolves.
func TestRetryHasNoGiveUp(t *testing.T) {
	clock := &simClock{}
	resolveAt := 20 * time.Minute
	notYet := errors.New("member-list key not there yet")
	var waits int
	var lastWait error
	err := Retry(context.Background(), Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second}, clock.sleep,
		func(context.Context) error {
			if clock.now < resolveAt {
				return notYet
			}
			return nil
		},
		func(err error, failed int, next time.Duration) {
			waits++
			lastWait = err
			if failed != waits || next <= 0 || next > 5*time.Second {
				t.Fatalf("waiting(%v, %d, %s) after %d waits", err, failed, next, waits-1)
			}
		})
	if err != nil {
		t.Fatalf("Retry = %v, want nil once the condition resolved", err)
	}
	if clock.now < resolveAt || clock.now > resolveAt+5*time.Second {
		t.Errorf("returned at %s of simulated time, want within one delay of %s", clock.now, resolveAt)
	}
	if waits < 240 || !errors.Is(lastWait, notYet) {
		t.Errorf("%d waits reported, last %v; want one per attempt (>= 240 over 20 minutes at 5 s)", waits, lastWait)
	}
}

// TestRetryPermanentReturnsAtOnce: a condition that cannot resolve by
// itself is not retried, and keeps its message and its wrapped error.
func TestRetryPermanentReturnsAtOnce(t *testing.T) {
	clock := &simClock{}
	malformed := errors.New("holds 5 bytes")
	calls := 0
	err := Retry(context.Background(), Backoff{Initial: time.Second, Max: time.Minute}, clock.sleep,
		func(context.Context) error {
			calls++
			if calls < 3 {
				return errors.New("Secret not found")
			}
			return Permanent(fmt.Errorf("member-list key: %w", malformed))
		}, nil)
	if !IsPermanent(err) || !errors.Is(err, malformed) || err.Error() != "member-list key: holds 5 bytes" {
		t.Fatalf("Retry = %v, want the permanent error as is", err)
	}
	if calls != 3 || clock.now != 3*time.Second {
		t.Errorf("%d attempts, %s simulated, want 3 and 3s", calls, clock.now)
	}
	if IsPermanent(errors.New("x")) || Permanent(nil) != nil {
		t.Error("IsPermanent of a plain error, or Permanent(nil), is wrong")
	}
}

func TestRetryEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Retry(ctx, Backoff{Initial: time.Millisecond, Max: time.Millisecond}, nil,
		func(context.Context) error {
			calls++
			if calls == 3 {
				cancel()
			}
			return errors.New("not yet")
		}, nil)
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Fatalf("Retry = %v after %d calls, want context.Canceled after 3", err, calls)
	}
}
