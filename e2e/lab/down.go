package lab

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Down removes every lab on this machine: detached labs from `make
// lab-up` and leftovers of crashed runs, found by their state files and
// by name (namespaces herald-<id>-*, root legs herald<id>, run
// directories). It refuses while a live process holds this world's lab
// lock (a test is using its lab), and leaves alone the runs of other
// worlds that are in use (world.go). Idempotent: with nothing to remove
// it does nothing and succeeds.
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
		if st, err := readState(filepath.Join(root, id)); err == nil && st.aliveElsewhere() {
			log.Info("lab run of another network namespace is in use; left alone", "run", id, "owner_pid", st.Owner.PID, "world", st.World)
			continue
		}
		r, err := removeRun(ctx, root, id, log)
		removed = append(removed, r...)
		if err != nil {
			return removed, fmt.Errorf("lab run %s: %w", id, err)
		}
	}
	removeUnfinishedRunDirs(root)
	removeStaleWorldLocks(root)
	_ = os.Remove(root) // only when empty
	return removed, nil
}

// removeUnfinishedRunDirs removes run directories a crash left before
// they were renamed into place (makeRunDir); one younger than a minute
// may be another world's lab starting, and stays.
func removeUnfinishedRunDirs(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !strings.HasPrefix(e.Name(), newRunDirPrefix) || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, e.Name()))
	}
}
