package lab

import (
	"fmt"
	"os"
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
// SCHED_FIFO softirqPriority. It records them in the run's state first, so
// that removeRun restores them even if this process dies right after. A
// thread already real-time (an administrator's choice) is left alone.
// Failing only logs: the lab then runs, its figures less about Herald on a
// busy machine.
func (l *Lab) boostSoftirqThreads() {
	var normal []procRecord
	for _, t := range ksoftirqdThreads() {
		if attr, err := unix.SchedGetAttr(t.PID, 0); err == nil && attr.Policy == unix.SCHED_NORMAL {
			normal = append(normal, t)
		}
	}
	if len(normal) == 0 {
		return
	}
	if err := l.state.update(func(s *state) { s.SoftirqThreads = normal }); err != nil {
		l.log.Warn("ksoftirqd keeps its scheduling policy: recording it failed", "err", err)
		return
	}
	for _, t := range normal {
		fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: softirqPriority}
		if err := unix.SchedSetAttr(t.PID, &fifo, 0); err != nil {
			l.log.Warn("ksoftirqd keeps its scheduling policy", "thread", t.Name, "pid", t.PID, "err", err)
		}
	}
	l.log.Debug("ksoftirqd runs real-time while the lab runs", "threads", len(normal))
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
