package k8s

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForCacheSync(t *testing.T) {
	var a, b atomic.Bool
	a.Store(true)
	go func() {
		time.Sleep(20 * time.Millisecond)
		b.Store(true)
	}()
	if !WaitForCacheSync(context.Background(), a.Load, b.Load) {
		t.Fatal("not synced")
	}
	if !b.Load() {
		t.Fatal("returned before every informer synced")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := func() bool { return false }
	if WaitForCacheSync(ctx, never) {
		t.Fatal("synced an informer that never syncs")
	}
}
