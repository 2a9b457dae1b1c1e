package lab_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// One lab for the package: default options (3 nodes, FRR, nftables).
func TestMain(m *testing.M) { lab.Main(m, lab.Options{}) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually is labkit.EventuallyWhy for a condition that returns an
// error while it does not hold.
func eventually(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	labkit.EventuallyWhy(t, d, what, func() (bool, string) {
		if err := cond(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }
