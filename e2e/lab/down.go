package lab

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// Down removes every lab on this machine: detached labs from `make
// lab-up` and leftovers of crashed runs, found by their state files and
// by name (namespaces herald-<id>-*, root legs herald<id>, run
// directories). It refuses while a live process holds the lab lock (a
// test is using its lab). Idempotent: with nothing to remove it does
// nothing and succeeds.
func Down(ctx context.Context, root string, log *slog.Logger) ([]string, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	lock, holder, err := tryLock(root)
	if err != nil {
		return nil, err
	}
	if lock == nil {
		return nil, fmt.Errorf("pid %d holds the lab lock %s (a test or `herald-lab up` is using the lab); wait for it or stop that process", holder, lockPath(root))
	}
	defer lock.release()
	var removed []string
	for _, id := range knownRuns(root) {
		r, err := removeRun(ctx, root, id, log)
		removed = append(removed, r...)
		if err != nil {
			return removed, fmt.Errorf("lab run %s: %w", id, err)
		}
	}
	_ = os.Remove(root) // only when empty
	return removed, nil
}
