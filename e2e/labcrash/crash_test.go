// Package labcrash tests the lab's own teardown the hard way: a process
// that owns a running lab (a real cluster with pods) is killed with
// SIGKILL, and `make lab-down` (lab.Down) must remove everything it left:
// processes (container shims and containers outlive their parent), node
// cgroups, mounts, namespaces, the root leg, files, and the real-time
// policy it gave ksoftirqd.
package labcrash

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

const (
	helperEnv   = "HERALD_LABCRASH_HELPER"
	detachedEnv = "HERALD_LABCRASH_DETACHED"
)

// TestHelperProcess is the victim: it brings a 2-node lab up with backend
// pods, says so by creating the file named in its environment, and waits
// to be killed.
func TestHelperProcess(t *testing.T) {
	ready := os.Getenv(helperEnv)
	if ready == "" {
		t.Skip("the victim process of TestSIGKILLedOwnerLeavesNothingAfterDown")
	}
	ctx := context.Background()
	if os.Getenv(detachedEnv) != "" {
		// `make lab-up` or `make demo`, killed during bring-up
		_, err := lab.Start(ctx, lab.Options{Nodes: 1, Detached: true})
		t.Fatalf("the lab came up before the kill: %v", err)
	}
	l, err := lab.Start(ctx, lab.Options{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureBackends(ctx, "crash"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ready, []byte(l.RunID()), 0o644); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

func TestSIGKILLedOwnerLeavesNothingAfterDown(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and a lab")
	}
	policies, heldBefore := lab.SoftirqPolicies(), lab.SoftirqBoostHeld("")
	ready := filepath.Join(t.TempDir(), "ready")
	victim := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=20m")
	victim.Env = append(os.Environ(), helperEnv+"="+ready)
	victim.Stdout, victim.Stderr = os.Stderr, os.Stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	var id string
	deadline := time.Now().Add(15 * time.Minute)
	for id == "" {
		if data, err := os.ReadFile(ready); err == nil {
			id = string(data)
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the lab owner exited before its lab was up: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = victim.Process.Kill()
			t.Fatal("the lab did not come up in 15 minutes")
		}
	}
	// what the run has before the kill: containers in node cgroups
	var before []string
	for _, rs := range lab.Status("") {
		if rs.ID == id {
			for cg := range rs.ContainerMemory {
				before = append(before, cg)
			}
		}
	}
	if len(before) == 0 {
		t.Errorf("run %s has no node cgroups before the kill", id)
	}
	for name, p := range lab.SoftirqPolicies() {
		if p != 1 && policies[name] == 0 {
			t.Errorf("%s runs policy %d while the lab is up, want SCHED_FIFO", name, p)
		}
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	removed, err := lab.Down(ctx, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("lab down after the owner was killed: %v (removed %v)", err, removed)
	}
	t.Logf("lab down removed: %s", strings.Join(removed, ", "))
	for _, left := range leftovers(id) {
		t.Error("left behind: " + left)
	}
	checkSoftirqRestored(t, policies, heldBefore)
}

// checkSoftirqRestored: after lab down, ksoftirqd runs as before the lab,
// unless a lab of another world (a package running beside this one)
// holds the boost now or held it then.
func checkSoftirqRestored(t *testing.T, before map[string]uint32, heldBefore bool) {
	t.Helper()
	after := lab.SoftirqPolicies()
	switch held := lab.SoftirqBoostHeld(""); {
	case held:
		t.Logf("ksoftirqd policies not compared: another lab holds its real-time policy")
	case !heldBefore:
		if !maps.Equal(after, before) {
			t.Errorf("ksoftirqd scheduling policies %v after lab down, %v before the lab", after, before)
		}
	default: // another lab held the boost before; nobody does now
		for name, p := range after {
			if p != 0 {
				t.Errorf("%s runs policy %d after every lab let go of it, want SCHED_OTHER", name, p)
			}
		}
	}
}

// TestKilledDetachedBringUpIsRemovedByTheNextLab: a detached lab killed
// before it was handed to the user (what CI found once, after a session
// was killed during `make demo`) is a leftover, not a user's lab: the
// next lab removes it instead of refusing to start.
func TestKilledDetachedBringUpIsRemovedByTheNextLab(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and a lab")
	}
	victim := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=20m")
	victim.Env = append(os.Environ(), helperEnv+"=-", detachedEnv+"=1")
	victim.Stdout, victim.Stderr = os.Stderr, os.Stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	id := waitForDetachedProcesses(t, victim.Process.Pid, exited)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	for _, rs := range lab.Status("") {
		if rs.ID == id && rs.LeftToUser {
			t.Errorf("run %s, killed during bring-up, counts as a lab left to the user", id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Options{Nodes: 1, NoKubeProxy: true})
	if err != nil {
		_, _ = lab.Down(ctx, "", slog.New(slog.DiscardHandler))
		t.Fatalf("the next lab after a killed detached bring-up: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Error(err)
	}
	for _, left := range leftovers(id) {
		t.Error("left behind: " + left)
	}
}

// waitForDetachedProcesses waits until the detached run owned by pid has
// started a process (its bring-up is under way) and returns the run's id.
func waitForDetachedProcesses(t *testing.T, pid int, exited <-chan error) string {
	t.Helper()
	var id string
	labkit.Eventually(t, 10*time.Minute, "the detached lab to start a process", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the detached lab's owner exited before starting a process: %v", err)
		default:
		}
		for _, rs := range lab.Status("") {
			if rs.Detached && rs.OwnerPID == pid && len(rs.Processes) > 0 {
				id = rs.ID
				return true
			}
		}
		return false
	})
	return id
}

// leftovers lists what of run id still exists on the machine.
func leftovers(id string) []string {
	var left []string
	stem := "herald-" + id + "-"
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), stem) {
				left = append(left, "namespace "+e.Name())
			}
		}
	}
	// every hierarchy: the v1 controllers, systemd's, and the cgroup v2
	// one a hybrid machine mounts at unified (runc and the kubelet create
	// the node cgroups there too)
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "blkio", "memory", "devices", "freezer", "pids", "systemd", "unified"} {
		if m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", c, stem+"*")); len(m) > 0 {
			left = append(left, "cgroups "+strings.Join(m, " "))
		}
	}
	if _, err := os.Stat(filepath.Join(lab.DefaultStateRoot, id)); err == nil {
		left = append(left, "directory "+filepath.Join(lab.DefaultStateRoot, id))
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mounts), "/herald-lab/"+id) {
		left = append(left, "mounts of the run")
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), "/herald-lab/"+id+"/") {
			left = append(left, "process "+p.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	if _, err := net.InterfaceByName("herald" + id); err == nil { // this namespace's, which /sys/class/net may not show
		left = append(left, "root leg herald"+id)
	}
	return left
}
