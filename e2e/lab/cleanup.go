package lab

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// clearStaleRuns removes runs left by a crashed owner. The caller holds
// the machine lock, so no live test owns them; a lab handed to the user
// (`make lab-up`, `make demo`) is not stale: refuse and say how to remove
// it. A detached lab whose bring-up was killed before the hand-over is.
func clearStaleRuns(ctx context.Context, root string, log *slog.Logger) error {
	removeStaleWorldLocks(root)
	for _, id := range knownRuns(root) {
		st, err := readState(filepath.Join(root, id))
		switch {
		case err == nil && st.aliveElsewhere():
			log.Debug("lab run of another network namespace left alone", "run", id, "world", st.World)
			continue
		case err == nil && st.leftToUser():
			return fmt.Errorf("a lab left up by `make lab-up` or `make demo` (run %s) is up; only one lab fits the address plan: run `make lab-down` first", id)
		case err == nil && st.Owner.alive() && st.Owner.PID != os.Getpid():
			return fmt.Errorf("lab run %s is still owned by pid %d; stop that process or run `make lab-down`", id, st.Owner.PID)
		}
		removed, err := removeRun(ctx, root, id, log)
		if err != nil {
			return fmt.Errorf("removing leftovers of crashed lab run %s: %w", id, err)
		}
		log.Warn("removed leftovers of a crashed lab run", "run", id, "removed", removed)
	}
	return nil
}

// knownRuns finds run ids from state directories, namespaces, root legs
// and node cgroups, sorted.
func knownRuns(root string) []string {
	var ids []string
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() && validRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	for _, ns := range labNamespaces("") {
		ids = append(ids, ns[len(nsPrefix):len(nsPrefix)+runIDLen])
	}
	ifaces, _ := net.Interfaces()
	for _, ifi := range ifaces {
		if id, ok := strings.CutPrefix(ifi.Name, linkStem); ok && validRunID(id) {
			ids = append(ids, id)
		}
	}
	var cgroups []string
	for _, h := range []string{"memory", "unified"} {
		m, _ := filepath.Glob(filepath.Join(cgroupMount, h, nsPrefix+"*-*"))
		cgroups = append(cgroups, m...)
	}
	for _, cg := range cgroups {
		if rest, ok := strings.CutPrefix(filepath.Base(cg), nsPrefix); ok && len(rest) > runIDLen && validRunID(rest[:runIDLen]) {
			ids = append(ids, rest[:runIDLen])
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// labNamespaces lists the named namespaces of run id ("" for every run).
func labNamespaces(id string) []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok || len(rest) < runIDLen+2 || rest[runIDLen] != '-' || !validRunID(rest[:runIDLen]) {
			continue
		}
		if id == "" || rest[:runIDLen] == id {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// removeRun stops and removes everything of run id: its recorded
// processes, any process inside its namespaces or whose command line
// refers to its run directory, its namespaces, its root leg and its
// directory. Every process is found by PID and stopped by PID.
func removeRun(ctx context.Context, root, id string, log *slog.Logger) ([]string, error) {
	dir := filepath.Join(root, id)
	var removed []string
	st, stErr := readState(dir)
	pids := runPIDs(ctx, dir, id, st.Processes)
	if len(pids) > 0 {
		terminate(pids, 5*time.Second)
		removed = append(removed, fmt.Sprintf("%d processes", len(pids)))
	}
	var errs []string
	// the containers of the run's nodes: in their cgroups, not in any
	// recorded process list
	if cg := runCgroups(id); len(cg) > 0 {
		errs = append(errs, removeCgroups(id)...)
		removed = append(removed, fmt.Sprintf("%d node cgroups", len(cg)))
	}
	errs = append(errs, removeProcsCgroup(id)...)
	if stErr == nil && len(st.SoftirqThreads) > 0 {
		errs = append(errs, releaseSoftirq(root, id, st.SoftirqThreads)...)
		removed = append(removed, "real-time ksoftirqd")
	}
	for _, ns := range labNamespaces(id) {
		if err := labkit.DeleteNS(ctx, ns); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		removed = append(removed, "netns "+ns)
	}
	if _, err := net.InterfaceByName(rootLinkName(id)); err == nil {
		if _, err := run(ctx, "ip", "link", "del", rootLinkName(id)); err != nil && linkExists(rootLinkName(id)) {
			errs = append(errs, err.Error())
		} else {
			removed = append(removed, "link "+rootLinkName(id))
		}
	}
	if exists(dir) {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err.Error())
		} else {
			removed = append(removed, dir)
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	log.Debug("lab run removed", "run", id, "removed", removed)
	return removed, nil
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// runPIDs: the recorded processes that still run, processes in the run's
// namespaces, and processes whose command line names the run directory.
func runPIDs(ctx context.Context, dir, id string, recorded []procRecord) []procRecord {
	var out []procRecord
	for _, r := range recorded {
		if r.alive() {
			out = append(out, r)
		}
	}
	for _, ns := range labNamespaces(id) {
		for _, pid := range labkit.NSPIDs(ctx, ns) {
			// never this process: its main thread stays in a lab namespace
			// when a goroutine that entered one ends on it (Go keeps that
			// thread rather than exit it)
			if pid != os.Getpid() {
				out = append(out, recordOf("in "+ns, ns, pid, ""))
			}
		}
	}
	out = append(out, pidsReferring(dir+string(filepath.Separator))...)
	slices.SortFunc(out, func(a, b procRecord) int { return a.PID - b.PID })
	return slices.CompactFunc(out, func(a, b procRecord) bool { return a.PID == b.PID })
}

// pidsReferring finds processes whose command line contains needle (the
// run directory): the lab's own processes, found by PID.
func pidsReferring(needle string) []procRecord {
	entries, _ := os.ReadDir("/proc")
	var out []procRecord
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), needle) {
			out = append(out, recordOf("refers to "+needle, "", pid, ""))
		}
	}
	return out
}

// terminate sends SIGTERM to each process (checked by PID and start
// time), waits up to grace, then SIGKILLs the rest and waits for them.
func terminate(procs []procRecord, grace time.Duration) {
	signalAll := func(sig syscall.Signal) {
		for _, r := range procs {
			if r.alive() {
				_ = syscall.Kill(r.PID, sig)
			}
		}
	}
	anyAlive := func() bool { return slices.ContainsFunc(procs, procRecord.alive) }
	waitGone := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for anyAlive() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
		return true
	}
	signalAll(syscall.SIGTERM)
	if waitGone(grace) {
		return
	}
	signalAll(syscall.SIGKILL)
	waitGone(5 * time.Second)
}
