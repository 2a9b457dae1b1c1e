package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-lb/herald/test/testenv"
)

// RunStatus describes one lab run found on the machine.
type RunStatus struct {
	ID              string
	Created         time.Time
	Detached, Ready bool
	// LeftToUser: a detached lab handed over to the user, which only `make
	// lab-down` removes; a detached lab that is not is a crashed bring-up.
	LeftToUser bool
	// Elsewhere: the run was started in another network namespace (a
	// world, see world.go) and shares no address with this one's labs.
	Elsewhere       bool
	OwnerPID        int
	OwnerAlive      bool
	Router          RouterKind
	APIServer       string
	AdminKubeconfig string
	// Namespaces that exist, and those the state lists but that are gone.
	Namespaces, MissingNamespaces []string
	Processes                     []ProcessStatus
	// ContainerMemory is what the nodes' cgroups (pods, their containers
	// and shims excluded) use, by node cgroup, in bytes.
	ContainerMemory map[string]int64
}

// ProcessStatus is one recorded process.
type ProcessStatus struct {
	Name  string
	NS    string
	PID   int
	Alive bool
	RSS   int64 // bytes
	Log   string
}

// Status lists the lab runs on this machine, by run id.
func Status(root string) []RunStatus {
	if root == "" {
		root = DefaultStateRoot
	}
	var out []RunStatus
	for _, id := range knownRuns(root) {
		rs := RunStatus{ID: id, Namespaces: labNamespaces(id)}
		if st, err := readState(filepath.Join(root, id)); err == nil {
			rs.Created, rs.Detached, rs.Ready, rs.LeftToUser = st.Created, st.Detached, st.Ready, st.leftToUser()
			rs.OwnerPID, rs.OwnerAlive, rs.Elsewhere = st.Owner.PID, st.Owner.alive(), st.elsewhere()
			rs.Router, rs.APIServer, rs.AdminKubeconfig = st.Router, st.APIServer, st.AdminKubeconfig
			for _, ns := range st.Namespaces {
				if !slices.Contains(rs.Namespaces, ns) {
					rs.MissingNamespaces = append(rs.MissingNamespaces, ns)
				}
			}
			for _, r := range st.Processes {
				alive := r.alive()
				rs.Processes = append(rs.Processes, ProcessStatus{Name: r.Name, NS: r.NS, PID: r.PID, Alive: alive, RSS: rssOf(r.PID, alive), Log: r.Log})
			}
		}
		rs.ContainerMemory = containerMemory(id)
		out = append(out, rs)
	}
	return out
}

// containerMemory reads memory.usage_in_bytes of each node cgroup of a run.
func containerMemory(id string) map[string]int64 {
	out := map[string]int64{}
	matches, _ := filepath.Glob(filepath.Join(cgroupMount, "memory", nsPrefix+id+"-*"))
	for _, m := range matches {
		data, err := os.ReadFile(filepath.Join(m, "memory.usage_in_bytes"))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
			out[filepath.Base(m)] = v
		}
	}
	return out
}

// TotalRSS sums the resident memory of the run's live processes and the
// memory its nodes' containers use.
func (rs RunStatus) TotalRSS() int64 {
	var sum int64
	for _, p := range rs.Processes {
		sum += p.RSS
	}
	for _, v := range rs.ContainerMemory {
		sum += v
	}
	return sum
}

// rssOf reads VmRSS of pid in bytes (0 when gone).
func rssOf(pid int, alive bool) int64 {
	if !alive {
		return 0
	}
	m, _ := testenv.ProcessMemory(pid)
	return m.RSS
}

// Memory reports this lab's processes with their resident memory.
func (l *Lab) Memory() RunStatus {
	for _, rs := range Status(l.opts.StateRoot) {
		if rs.ID == l.id {
			return rs
		}
	}
	return RunStatus{ID: l.id}
}
