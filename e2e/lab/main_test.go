package lab_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// One lab for the package: default options (3 nodes, FRR, nftables).
func TestMain(m *testing.M) { lab.Main(m, lab.Options{}) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 100ms until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }
