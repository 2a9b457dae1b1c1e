package lab

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// worldLock serializes the labs of one world (see world.go): there is
// one address plan per root namespace, so one lab at a time in it. Test
// packages that run in parallel in the same namespace wait for each other
// here. The kernel drops the lock when its holder dies.
type worldLock struct{ f *os.File }

// lockPath is next to the state root (/run/herald-lab.lock, or
// worldLockPath in a world of its own), so that the state root itself can
// go when the last run does.
func lockPath(root string) string {
	if w := thisWorld(); w != "" && w != machineWorld() {
		return worldLockPath(root, w)
	}
	return filepath.Clean(root) + ".lock"
}

func openLock(root string) (*os.File, error) { return openLockFile(lockPath(root)) }

// openLockFile opens (creating) a lock file beside the state root: the
// lab lock, or the softirq lock.
func openLockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lab lock directory: %w", err)
	}
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

// WithFileLock runs fn holding an exclusive lock on path (created, with
// its directory, if missing), waiting for it; the kernel drops the lock
// if the process dies.
func WithFileLock(path string, fn func() error) error {
	f, err := openLockFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	return fn()
}

// acquireLock waits for the machine lock until ctx ends, saying once who
// holds it.
func acquireLock(ctx context.Context, root string, log *slog.Logger) (*worldLock, error) {
	f, err := openLock(root)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", lockPath(root), err)
		}
		if !said {
			log.Info("waiting for another lab on this machine to finish", "holder_pid", lockHolder(root), "lock", lockPath(root))
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lab lock held by pid %d: %w", lockHolder(root), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &worldLock{f: f}, nil
}

// tryLock takes the lock if it is free; otherwise it returns the holder.
func tryLock(root string) (*worldLock, int, error) {
	f, err := openLock(root)
	if err != nil {
		return nil, 0, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, lockHolder(root), nil
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &worldLock{f: f}, 0, nil
}

func lockHolder(root string) int {
	data, _ := os.ReadFile(lockPath(root))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func (l *worldLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}
