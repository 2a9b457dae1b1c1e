package leader

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFence(t *testing.T) {
	var none *Fence
	if _, cancel, err := none.Check(context.Background()); err != nil {
		t.Fatalf("no leader election: %v", err)
	} else {
		cancel()
	}
	f := &Fence{renewal: time.Minute}
	if _, _, err := f.Check(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("before any renewal: %v, want ErrNotLeader", err)
	}
	started := time.Now()
	f.renewed(started)
	ctx, cancel, err := f.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(started.Add(time.Minute)) {
		t.Errorf("write deadline %v, want the renewal start plus the renew deadline", d)
	}
	cancel()
	f.renewed(started.Add(-time.Hour)) // an older renewal never moves the fence back
	if _, cancel, err := f.Check(context.Background()); err != nil {
		t.Errorf("after an older renewal: %v", err)
	} else {
		cancel()
	}
	f.close()
	if _, _, err := f.Check(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Errorf("after losing the lease: %v", err)
	}
	expired := &Fence{renewal: time.Millisecond}
	expired.renewed(time.Now().Add(-time.Second))
	if _, _, err := expired.Check(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a renewal older than the renew deadline: %v", err)
	}
}
