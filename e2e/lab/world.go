package lab

import (
	"os"
	"path/filepath"
	"strings"
)

// A lab's "root namespace" is the network namespace of the process that
// starts it: the API server listens there on RootIPv4, and the root leg,
// its addresses and the routes to the lab's subnets go there. Every other
// namespace, cgroup, directory and process of a run carries the run's id,
// so two labs conflict only in that root namespace. A test binary started
// in a network namespace of its own (hack/own-network.sh, `unshare --net`)
// therefore gets a lab of its own beside the others: a world. `make e2e`
// runs every end-to-end package in a world of its own (one at a time;
// E2E_LINES=2, two side by side).
//
// Runs of the same world exclude each other (the lab lock is per world);
// a run of another world whose owner is alive, or that is handed to a
// user, is never removed as a leftover (clearStaleRuns, Down). The run
// directories under the state root, the cgroups and the named namespaces
// are shared by all worlds, which is how `make lab-down` in the root
// namespace still finds and removes every crashed run.

// netnsOf is the identity of a process's network namespace
// ("net:[4026531840]"), or "" when it cannot be read.
func netnsOf(pid string) string {
	link, err := os.Readlink("/proc/" + pid + "/ns/net")
	if err != nil {
		return ""
	}
	return link
}

// thisWorld is the network namespace this process starts labs in.
func thisWorld() string { return netnsOf("self") }

// machineWorld is the machine's own (initial) network namespace.
func machineWorld() string { return netnsOf("1") }

// worldOf is the world a run was started in; a state written before
// worlds existed was written in the machine's namespace.
func (s state) worldOf() string {
	if s.World != "" {
		return s.World
	}
	return machineWorld()
}

// elsewhere reports whether the run belongs to another world.
func (s state) elsewhere() bool { return s.worldOf() != thisWorld() }

// aliveElsewhere reports whether the run is another world's and in use:
// its owner runs, or it is handed to a user (or to a test holding it).
// Such a run shares no address with this world's labs and is left alone.
func (s state) aliveElsewhere() bool {
	return s.elsewhere() && (s.Owner.alive() || s.leftToUser())
}

// worldLockPath is the lab lock of the world netns:
// <root>.net-<inode>.lock.
func worldLockPath(root, netns string) string {
	return filepath.Clean(root) + ".net-" + strings.Trim(strings.TrimPrefix(netns, "net:"), "[]") + ".lock"
}

// removeStaleWorldLocks removes the lock files of worlds that are gone:
// no process is left in their network namespace, so nothing can take
// their lock again (an anonymous namespace dies with its last process).
func removeStaleWorldLocks(root string) {
	locks, _ := filepath.Glob(worldLockPath(root, "*"))
	if len(locks) == 0 {
		return
	}
	live := map[string]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if w := netnsOf(p.Name()); w != "" {
			live[worldLockPath(root, w)] = true
		}
	}
	for _, lock := range locks {
		if !live[lock] {
			_ = os.Remove(lock)
		}
	}
}
