package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/herald-lb/herald/test/testenv"
)

// cgroupMount is where the root namespace has the cgroup v1 hierarchies.
const cgroupMount = "/sys/fs/cgroup"

// cgroupHierarchies are the directories under cgroupMount that hold the
// nodes' cgroup roots: each v1 controller's, systemd's named hierarchy,
// and the cgroup v2 hierarchy a hybrid machine mounts at "unified", where
// runc and the kubelet create them too (each node's containerdScript
// mounts it). Left out of teardown, every lab run left its three node
// cgroups there: 915 empty ones on a CI machine after 305 runs.
var cgroupHierarchies = append(slices.Clone(cgroupV1Controllers), "systemd", "unified")

// runCgroups lists the cgroup roots of a run's nodes in every hierarchy
// (nodes' cgroupRoot directories are named nsPrefix+run+"-"+node).
func runCgroups(id string) []string {
	var out []string
	for _, c := range cgroupHierarchies {
		matches, _ := filepath.Glob(filepath.Join(cgroupMount, c, nsPrefix+id+"-*"))
		out = append(out, matches...)
	}
	return out
}

// cgroupPIDs are the processes in a cgroup tree (the containers of a
// node, found by cgroup, not by name).
func cgroupPIDs(root string) []int {
	var pids []int
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		data, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	slices.Sort(pids)
	return slices.Compact(pids)
}

// killCgroupTrees SIGKILLs, by PID, every process in the cgroup trees
// under roots until none is left or 10 s have passed.
func killCgroupTrees(roots []string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		for _, r := range roots {
			pids = append(pids, cgroupPIDs(r)...)
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeCgroups kills every process left in the run's node cgroups and
// removes the cgroup directories depth-first.
func removeCgroups(id string) []string {
	roots := runCgroups(id)
	if len(roots) == 0 {
		return nil
	}
	killCgroupTrees(roots)
	var left []string
	for _, r := range roots {
		var dirs []string
		_ = filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		// deepest first
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			if err := removeCgroupDir(d); err != nil {
				left = append(left, "cgroup "+d+": "+err.Error())
			}
		}
	}
	return left
}

// removeCgroupDir retries rmdir for a moment: a cgroup whose last task
// just died can be busy briefly.
func removeCgroupDir(d string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(d); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// labCPUShares is the default CPU weight (cgroup v1 cpu.shares, the
// largest there is; Options.CPUShares) of every lab cgroup: each node's
// cgroup root and the group of the lab's own processes. A process in no
// group weighs 1024, so when other work loads the machine (a build,
// another test package) the cluster under test
// still gets the CPU it needs, as a real node's kubepods does: an L2
// answer measured late must be Herald's lateness, not the machine's.
const labCPUShares = 262144

// procsCgroup is the cpu cgroup of the lab's processes outside the nodes'
// containers (control plane, containerd, kubelets, routers, probers). Its
// name does not match runCgroups' pattern: stopping the nodes must not
// kill them.
func procsCgroup(id string) string { return filepath.Join(cgroupMount, "cpu", nsPrefix+id+"_lab") }

// joinProcsCgroup moves pid into the run's procsCgroup, creating it with
// the lab's CPU weight first. Failing is not fatal (the lab then runs at
// the weight of everything else), so it only logs.
func (l *Lab) joinProcsCgroup(pid int) {
	dir := procsCgroup(l.id)
	err := os.Mkdir(dir, 0o755)
	if err == nil || os.IsExist(err) {
		err = os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(l.opts.CPUShares)), 0o644)
	}
	if err == nil {
		err = moveToCgroup(dir, pid)
	}
	if err != nil && !os.IsNotExist(err) {
		l.log.Warn("lab process keeps the default CPU weight", "pid", pid, "error", err)
	}
}

// RunAtLabWeight moves pid, a process a test started that stands for
// something outside the cluster's machines (an operator's shell running
// kubectl), into the lab's process cgroup with its children to come. On a
// real site that runs on a machine of its own; here, left in the test's
// cgroup, it gets 1/256 of the lab's CPU weight, and on a busy machine one
// kubectl took 2.5 s to delete a Lease.
func (l *Lab) RunAtLabWeight(pid int) { l.joinProcsCgroup(pid) }

// AtLabWeight moves this test process (all its threads, and the children
// it starts from now on) into the lab's process cgroup and returns a
// function that moves it back. For a measurement that stands for the
// network's own view of time, such as a router's FIB polled every few
// milliseconds: from the test's cgroup, at 1/256 of the lab's weight, a
// poll on a busy machine ran seconds late and counted that lateness as
// the router's (a 3 s hold timer measured as 5.4 s in CI). Keep what
// runs at this weight short: it competes with the cluster.
func (l *Lab) AtLabWeight() (restore func()) {
	from, err := ownCPUCgroup()
	if err != nil {
		l.log.Warn("test process keeps its CPU weight", "error", err)
		return func() {}
	}
	l.joinProcsCgroup(os.Getpid())
	return func() {
		if err := moveToCgroup(from, os.Getpid()); err != nil {
			l.log.Warn("moving the test process back to its cgroup", "cgroup", from, "error", err)
		}
	}
}

// leaveCgroup moves this process to the root cpu cgroup if it is in dir.
func leaveCgroup(dir string) {
	if own, err := ownCPUCgroup(); err == nil && own == dir {
		_ = moveToCgroup(filepath.Join(cgroupMount, "cpu"), os.Getpid())
	}
}

// moveToCgroup moves process pid (all its threads) into the cgroup dir.
func moveToCgroup(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// ownCPUCgroup is the directory of this process's cgroup v1 cpu cgroup.
func ownCPUCgroup() (string, error) { return testenv.CgroupDir(os.Getpid(), "cpu") }

// removeProcsCgroup kills what is left in the run's procsCgroup (by PID)
// and removes it.
func removeProcsCgroup(id string) []string {
	dir := procsCgroup(id)
	if !exists(dir) {
		return nil
	}
	leaveCgroup(dir) // a test process at the lab's weight (AtLabWeight) that never moved back
	killCgroupTrees([]string{dir})
	if err := removeCgroupDir(dir); err != nil {
		return []string{"cgroup " + dir + ": " + err.Error()}
	}
	return nil
}

// NodeProcesses are the PIDs of the processes in a node's cgroup tree: its
// pods' containers (found by cgroup, not by name).
func (l *Lab) NodeProcesses(node string) []int {
	return cgroupPIDs(filepath.Join(cgroupMount, "pids", nsPrefix+l.id+"-"+node))
}
