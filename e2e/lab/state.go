package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// DefaultStateRoot holds one directory per run: state.json, logs,
// kubeconfigs, the control plane's PKI and data, the router's directory.
const DefaultStateRoot = "/run/herald-lab"

const (
	runIDLen  = 4
	nsPrefix  = "herald-"          // namespaces: herald-<runid>-<host>
	linkStem  = labkit.RootLegStem // the root leg: herald<runid>
	stateName = "state.json"
)

func nsName(runID, host string) string { return nsPrefix + runID + "-" + host }

func rootLinkName(runID string) string { return linkStem + runID }

// state is what a run leaves on disk so that another process (`herald-lab
// down`, or the next lab after a crash) can find and remove everything.
type state struct {
	RunID string `json:"run_id"`
	// World is the network namespace the run was started in (world.go).
	World    string    `json:"world,omitempty"`
	Created  time.Time `json:"created"`
	Detached bool      `json:"detached"`
	// Owner started the lab; a run whose owner is gone is a leftover of
	// a crash unless it was left to the user (leftToUser).
	Owner           procRecord `json:"owner"`
	Nodes           int        `json:"nodes"`
	Router          RouterKind `json:"router"`
	Namespaces      []string   `json:"namespaces"`
	RootLink        string     `json:"root_link"`
	APIServer       string     `json:"api_server,omitempty"`
	AdminKubeconfig string     `json:"admin_kubeconfig,omitempty"`
	Ready           bool       `json:"ready"`
	// HandedOver: the owner of a detached lab finished and left it to the
	// user (Release). A detached lab never handed over whose owner is gone
	// is the leftover of a `make lab-up` or `make demo` killed mid-way.
	HandedOver bool `json:"handed_over,omitempty"`
	// Holder, when set, is the process a handed-over lab is kept for (a
	// test running `make demo`); once it is gone the lab is a leftover.
	Holder    *procRecord  `json:"holder,omitempty"`
	Processes []procRecord `json:"processes"`
	// SoftirqThreads are the ksoftirqd threads the run made real-time
	// (see boostSoftirqThreads), for removeRun to restore.
	SoftirqThreads []procRecord `json:"softirq_threads,omitempty"`
}

// leftToUser reports whether the run is a lab handed to a user, which
// no other lab may remove: only `make lab-down` does.
func (s state) leftToUser() bool {
	return s.Detached && s.HandedOver && (s.Holder == nil || s.Holder.alive())
}

// procRecord identifies a process by PID and start time (so a reused PID
// is never mistaken for it).
type procRecord struct {
	Name  string `json:"name"`
	NS    string `json:"ns,omitempty"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Log   string `json:"log,omitempty"`
}

type stateFile struct {
	mu   sync.Mutex
	path string
	s    state
}

func newStateFile(dir string, s state) (*stateFile, error) {
	f := &stateFile{path: filepath.Join(dir, stateName), s: s}
	return f, f.update(func(*state) {})
}

// update changes the state and writes it atomically.
func (f *stateFile) update(change func(*state)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.s)
	data, err := json.MarshalIndent(f.s, "", "  ")
	if err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing lab state: %w", err)
	}
	return os.Rename(tmp, f.path)
}

// snapshot returns a copy of the state.
func (f *stateFile) snapshot() state {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.s
	s.Processes = slices.Clone(s.Processes)
	s.SoftirqThreads = slices.Clone(s.SoftirqThreads)
	s.Namespaces = slices.Clone(s.Namespaces)
	return s
}

func (f *stateFile) addProcess(r procRecord) error {
	return f.update(func(s *state) { s.Processes = append(s.Processes, r) })
}

func (f *stateFile) removeProcess(pid int) error {
	return f.update(func(s *state) {
		s.Processes = slices.DeleteFunc(s.Processes, func(r procRecord) bool { return r.PID == pid })
	})
}

func readState(dir string) (state, error) {
	var s state
	data, err := os.ReadFile(filepath.Join(dir, stateName))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, stateName), err)
	}
	return s, nil
}

// procStat is pid's /proc/pid/stat: its name (field 2, comm) and the
// fields after it, fields[0] being field 3 (state).
func procStat(pid int) (comm string, fields []string, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", nil, err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", nil, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	return s[open+1 : closing], strings.Fields(s[closing+1:]), nil
}

// procStart is the start time of pid (field 22 of /proc/pid/stat, in
// clock ticks since boot).
func procStart(pid int) (uint64, error) {
	_, fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return startOf(pid, fields)
}

func startOf(pid int, fields []string) (uint64, error) {
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// alive reports whether the recorded process still runs (and is not a
// zombie).
func (r procRecord) alive() bool {
	_, fields, err := procStat(r.PID)
	if err != nil {
		return false
	}
	start, err := startOf(r.PID, fields)
	return err == nil && start == r.Start && fields[0] != "Z"
}

func recordOf(name, ns string, pid int, log string) procRecord {
	start, _ := procStart(pid)
	return procRecord{Name: name, NS: ns, PID: pid, Start: start, Log: log}
}
