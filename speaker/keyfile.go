package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-lb/herald/internal/members"
)

// waitForKey reads the member-list key file, waiting up to timeout for it
// to appear. The Secret volume is optional: right after an install the
// speakers start before the controller has created the Secret, and the
// kubelet fills the volume once it exists (within its sync period, about
// a minute). A key file that exists but is malformed fails at once.
func waitForKey(ctx context.Context, path string, interval, timeout time.Duration, log *slog.Logger) (members.Keys, error) {
	var keys members.Keys
	var last error
	warned := false
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		keys, last = members.ReadKeyFile(path)
		switch {
		case last == nil:
			return true, nil
		case errors.Is(last, fs.ErrNotExist):
			if !warned {
				log.Warn("member-list key not there yet; waiting for the Secret to be created and mounted", "file", path, "timeout", timeout)
				warned = true
			}
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && last != nil {
		return keys, fmt.Errorf("waited %s: %w", timeout, last)
	}
	return keys, err
}
