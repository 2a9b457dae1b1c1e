package layer2

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestRunStops runs the announcer in the test's own network namespace with
// nothing to announce (netlink is only read; no socket is opened) and
// checks that Run refuses a second concurrent call, returns nil when its
// context ends, and leaves no goroutine of this package behind.
func TestRunStops(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	labkit.Eventually(t, 5*time.Second, "Run following the links", func() bool {
		select {
		case err := <-done:
			if errors.Is(err, syscall.EPERM) && os.Geteuid() != 0 {
				t.Skipf("netlink subscriptions refused to this unprivileged user: %v", err)
			}
			t.Fatalf("Run returned early: %v", err)
		default:
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.net.links) > 0
	})
	if err := a.Run(ctx); err == nil {
		t.Fatal("a second concurrent Run was accepted")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	labkit.Eventually(t, 5*time.Second, "no goroutine of the package left", func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "layer2.(*Announcer)") && !strings.Contains(stacks, "vishvananda/netlink")
	})
}
