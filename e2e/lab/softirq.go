package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The lab's packets cross veths and a bridge, and the kernel forwards
// them in its NET_RX softirq. On a busy machine that work moves to the
// per-CPU ksoftirqd threads, ordinary threads of the root cgroup at weight
// 1024, which the lab's own cgroups (labCPUShares) outweigh 256 to 1: with
// the cluster busy (a rolling update starting pods), every frame of the
// lab then waits in the backlog for ksoftirqd. Measured in
// TestSpeakerRollingUpdate: ksoftirqd waited up to 350 ms runnable in one
// 50 ms sample, and the client saw 100-210 ms without an answer followed by
// every queued answer at once, while the speakers counted no answer later
// than 100 ms from its request's arrival. So while a lab runs, ksoftirqd
// runs SCHED_FIFO at the lowest real-time priority, as a real node's NIC
// interrupts are served before any process; the kernel's real-time
// throttling (95% by default) still bounds it. Down restores the policy
// from the run's state, after a crash too.

// softirqPriority is the SCHED_FIFO priority given to ksoftirqd (1, the
// lowest: above every normal thread, below every real-time one).
const softirqPriority = 1

// ksoftirqdThreads are the kernel's ksoftirqd/N threads: children of
// kthreadd (PID 2) with that name.
func ksoftirqdThreads() []procRecord {
	entries, _ := os.ReadDir("/proc")
	var out []procRecord
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, fields, err := procStat(pid)
		if err != nil || len(fields) < 2 || fields[1] != "2" || !strings.HasPrefix(comm, "ksoftirqd/") {
			continue
		}
		start, err := startOf(pid, fields)
		if err != nil {
			continue
		}
		out = append(out, procRecord{Name: comm, PID: pid, Start: start})
	}
	return out
}

// boostSoftirqThreads gives every ksoftirqd thread that runs SCHED_OTHER
// SCHED_FIFO softirqPriority. The boost is the machine's, shared by the
// labs of every world (world.go): under the softirq lock, a run records
// the threads it boosts and those another run's boost holds, in its state
// first, so that removeRun can give them back even if this process dies
// right after; the last run to let go restores them (releaseSoftirq). A
// thread made real-time by anyone else (an administrator's choice) is
// left alone. Failing only logs: the lab then runs, its figures less
// about Herald on a busy machine.
func (l *Lab) boostSoftirqThreads() {
	var normal, held []procRecord
	err := withSoftirqLock(l.opts.StateRoot, func() error {
		others := boostHeldBy(l.opts.StateRoot, l.id)
		for _, t := range ksoftirqdThreads() {
			attr, err := unix.SchedGetAttr(t.PID, 0)
			switch {
			case err != nil:
			case attr.Policy == unix.SCHED_NORMAL:
				normal = append(normal, t)
			case others[t] && stillBoosted(t):
				held = append(held, t)
			}
		}
		if len(normal)+len(held) == 0 {
			return nil
		}
		if err := l.state.update(func(s *state) { s.SoftirqThreads = append(slices.Clone(normal), held...) }); err != nil {
			return fmt.Errorf("recording ksoftirqd's policy: %w", err)
		}
		for _, t := range normal {
			fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: softirqPriority}
			if err := unix.SchedSetAttr(t.PID, &fifo, 0); err != nil {
				l.log.Warn("ksoftirqd keeps its scheduling policy", "thread", t.Name, "pid", t.PID, "error", err)
			}
		}
		return nil
	})
	if err != nil {
		l.log.Warn("ksoftirqd keeps its scheduling policy", "error", err)
		return
	}
	l.log.Debug("ksoftirqd runs real-time while the lab runs", "boosted", len(normal), "already_boosted_by_another_lab", len(held))
}

// softirqReleased marks a run directory whose run has let go of the
// boost (its threads are restored or held by another run).
const softirqReleased = "softirq-released"

// withSoftirqLock runs fn holding the machine's softirq lock (blocking):
// boosting and letting go are serialized across every lab process.
func withSoftirqLock(root string, fn func() error) error {
	return WithFileLock(filepath.Clean(root)+".softirq.lock", fn)
}

// boostHeldBy is the set of threads whose boost runs other than except
// hold: recorded in their state and not let go, crashed runs included
// (their removal lets go).
func boostHeldBy(root, except string) map[procRecord]bool {
	held := map[procRecord]bool{}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || id == except || !validRunID(id) || exists(filepath.Join(root, id, softirqReleased)) {
			continue
		}
		st, err := readState(filepath.Join(root, id))
		if err != nil {
			continue
		}
		for _, t := range st.SoftirqThreads {
			held[procRecord{Name: t.Name, PID: t.PID, Start: t.Start}] = true
		}
	}
	return held
}

// SoftirqBoostHeld reports whether a lab run on the machine (any world)
// holds ksoftirqd's real-time policy, for tests that check a lab left the
// threads as it found them.
func SoftirqBoostHeld(root string) bool {
	if root == "" {
		root = DefaultStateRoot
	}
	return len(boostHeldBy(root, "")) > 0
}

// releaseSoftirq lets run id go of the boost: it restores the threads
// unless another run still holds them, and marks the run as let go. It
// returns what it could not restore.
func releaseSoftirq(root, id string, threads []procRecord) []string {
	var errs []string
	err := withSoftirqLock(root, func() error {
		if len(boostHeldBy(root, id)) == 0 {
			errs = restoreSoftirqThreads(threads)
		}
		return os.WriteFile(filepath.Join(root, id, softirqReleased), nil, 0o644)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Sprintf("letting go of ksoftirqd's policy: %v", err))
	}
	return errs
}

// restoreSoftirqThreads gives the recorded threads that still run
// SCHED_FIFO softirqPriority back SCHED_OTHER (nice 0, ksoftirqd's
// default). It returns what it could not restore.
func restoreSoftirqThreads(threads []procRecord) []string {
	var errs []string
	for _, t := range threads {
		if !stillBoosted(t) {
			continue // gone, or changed since by someone else: theirs
		}
		normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
		if err := unix.SchedSetAttr(t.PID, &normal, 0); err != nil {
			errs = append(errs, fmt.Sprintf("restore the scheduling policy of %s (pid %d): %v", t.Name, t.PID, err))
		}
	}
	return errs
}

// stillBoosted reports whether t still runs with the policy
// boostSoftirqThreads gave it.
func stillBoosted(t procRecord) bool {
	if !t.alive() {
		return false
	}
	attr, err := unix.SchedGetAttr(t.PID, 0)
	return err == nil && attr.Policy == unix.SCHED_FIFO && attr.Priority == softirqPriority
}

// SoftirqPolicies maps each ksoftirqd thread's name to its scheduling
// policy (0 SCHED_OTHER, 1 SCHED_FIFO), for tests that check a lab left
// them as it found them.
func SoftirqPolicies() map[string]uint32 {
	out := map[string]uint32{}
	for _, t := range ksoftirqdThreads() {
		if attr, err := unix.SchedGetAttr(t.PID, 0); err == nil {
			out[t.Name] = attr.Policy
		}
	}
	return out
}
