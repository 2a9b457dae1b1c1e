package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// PauseNode stops every process of a node with SIGSTOP, as a paused VM or
// a live migration stops it: its pods' containers (by cgroup), its
// kubelet, containerd and kube-proxy, and the processes they started or
// that serve the node (the containerd shims, found by the node's
// directory on their command line), with their descendants. The returned
// resume sends them SIGCONT. It returns how many processes it stopped.
func (l *Lab) PauseNode(node string) (resume func() error, stopped int, err error) {
	n, err := l.Node(node)
	if err != nil {
		return nil, 0, err
	}
	var roots []int
	for _, name := range []string{"kubelet-", "containerd-", "kube-proxy-"} {
		if p := l.process(name + n.Name); p != nil {
			roots = append(roots, p.PID())
		}
	}
	pids := slices.DeleteFunc(nodePIDs(roots, l.nodeDir(n), l.NodeProcesses(node)), func(pid int) bool { return pid == os.Getpid() })
	if len(pids) == 0 {
		return nil, 0, fmt.Errorf("pause %s: no process found", node)
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("SIGSTOP %d: %w", pid, err))
		}
	}
	resume = func() error {
		var errs []error
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("SIGCONT %d: %w", pid, err))
			}
		}
		return errors.Join(errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return resume, len(pids), fmt.Errorf("pause %s: %w", node, err)
	}
	return resume, len(pids), nil
}

// nodePIDs are the given processes, those whose command line names dir,
// and all their descendants, sorted.
func nodePIDs(roots []int, dir string, more []int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPID(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.Contains(string(cmd), dir+"/") {
			roots = append(roots, pid)
		}
	}
	seen := map[int]bool{}
	out := slices.Clone(more)
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		roots = append(roots, children[pid]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parentPID reads a process's parent from /proc/<pid>/stat.
func parentPID(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
