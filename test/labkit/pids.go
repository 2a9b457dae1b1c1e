package labkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// InNS prefixes argv with `ip netns exec ns` (nothing for ns ""): that
// execs in place, so a started process's PID is the program's own.
func InNS(ns string, argv ...string) []string {
	if ns == "" {
		return argv
	}
	return append([]string{"ip", "netns", "exec", ns}, argv...)
}

// NSPIDs lists the processes inside the named network namespace.
func NSPIDs(ctx context.Context, ns string) []int {
	out, _ := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Gone reports whether pid no longer runs (absent, or a zombie its parent
// has yet to reap).
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// the state follows the command name, which is in parentheses
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}

// StopPIDs sends SIGTERM to each pid, waits up to grace for them to go,
// then sends SIGKILL to the rest and waits up to 5 s more. A grace of 0
// sends SIGKILL at once.
func StopPIDs(pids []int, grace time.Duration) {
	if grace > 0 {
		signalAll(pids, syscall.SIGTERM)
		if waitGone(pids, grace) {
			return
		}
	}
	signalAll(pids, syscall.SIGKILL)
	waitGone(pids, 5*time.Second)
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		if !Gone(pid) {
			_ = syscall.Kill(pid, sig)
		}
	}
}

func waitGone(pids []int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		all := true
		for _, pid := range pids {
			all = all && Gone(pid)
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(eventuallyInterval)
	}
}

// DeleteNS stops (by PID, SIGKILL) whatever still runs in the named
// namespace and deletes it, which removes its links too.
func DeleteNS(ctx context.Context, ns string) error {
	StopPIDs(NSPIDs(ctx, ns), 0)
	if out, err := exec.CommandContext(ctx, "ip", "netns", "del", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}
