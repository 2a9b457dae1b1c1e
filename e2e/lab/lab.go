package lab

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// Lab is a running lab, split by concern: its Network (namespaces,
// links, addresses, routes), its Routers (FRR or BIRD) and its Cluster
// (the Kubernetes API and what acts through it), whose methods it
// offers as its own; the rest of Lab is the run itself (state, processes,
// start and teardown). Its methods are safe for concurrent use.
type Lab struct {
	Network
	Routers
	Cluster

	opts  Options
	log   *slog.Logger
	dir   string
	lock  *worldLock
	state *stateFile
	bin   binaries
	repo  string

	mu      sync.Mutex
	procs   []*labkit.Process // running, in start order
	history []procRecord      // every process ever started, for Leftovers
	timings []Timing
	closed  bool
	// leftovers is what Close found still there after teardown.
	leftovers []string
}

// Timing is how long one phase of Start took.
type Timing struct {
	Phase string
	Took  time.Duration
}

// Start brings a lab up. It waits for any other lab on the machine to go
// away first (one address plan, one lab), removes leftovers of crashed
// runs, refuses when the lab's ranges are in use in the root namespace,
// and installs missing Debian packages. On error everything it made is
// removed again.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkPlatform(); err != nil {
		return nil, err
	}
	l := &Lab{Network: Network{macs: map[string]string{}}, opts: opts, log: opts.Logger}
	if err := l.prepare(ctx); err != nil {
		l.lock.release()
		return nil, err
	}
	if err := l.setup(ctx); err != nil {
		l.log.Error("lab start failed; removing it", "run", l.id, "error", err)
		l.dumpLogs(os.Stderr, 25)
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return l, nil
}

// prepare: packages, lock, leftovers, preflight checks, run directory.
func (l *Lab) prepare(ctx context.Context) error {
	start := time.Now()
	if err := ensurePackages(ctx, l.opts.NoInstall, l.log); err != nil {
		return err
	}
	repo, err := testenv.RepoRoot()
	if err != nil {
		return fmt.Errorf("the lab builds its helpers from the repository: %w", err)
	}
	l.repo = repo
	if l.lock, err = acquireLock(ctx, l.opts.StateRoot, l.log); err != nil {
		return err
	}
	if err := clearStaleRuns(ctx, l.opts.StateRoot, l.log); err != nil {
		return err
	}
	if err := labkit.CheckRootNamespace(ctx, false); err != nil {
		return err
	}
	if err := checkRegistries(ctx); err != nil {
		return err
	}
	if err := l.makeRunDir(); err != nil {
		return err
	}
	l.boostSoftirqThreads()
	l.addTiming("preflight", start)
	return nil
}

// makeRunDir creates the run directory with its state in one step: a
// directory made under a temporary name and renamed into place. A lab of
// another world (world.go) thus never finds a run directory without its
// owner recorded and takes it for a crash's leftover.
func (l *Lab) makeRunDir() error {
	root := l.opts.StateRoot
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("lab state root: %w", err)
	}
	tmp, err := os.MkdirTemp(root, newRunDirPrefix)
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	defer os.RemoveAll(tmp) // only when the rename did not happen
	if err := os.Mkdir(filepath.Join(tmp, "logs"), 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // FRR drops to user frr
		return err
	}
	for {
		id := l.opts.RunID
		if id == "" {
			id = randomID()
		}
		dir := filepath.Join(root, id)
		if exists(dir) {
			if l.opts.RunID != "" {
				return fmt.Errorf("run directory %s exists", dir)
			}
			continue
		}
		st, err := newStateFile(tmp, l.initialState(id))
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			if l.opts.RunID == "" && exists(dir) {
				continue // taken meanwhile by a lab of another world
			}
			return fmt.Errorf("run directory: %w", err)
		}
		st.path = filepath.Join(dir, stateName)
		l.id, l.dir, l.state = id, dir, st
		for i := 1; i <= l.opts.Nodes; i++ {
			l.nodes = append(l.nodes, newNode(i, id))
		}
		return nil
	}
}

// newRunDirPrefix names run directories not yet renamed into place.
const newRunDirPrefix = ".new-"

// initialState is what run id records before it makes anything.
func (l *Lab) initialState(id string) state {
	var nss []string
	for _, h := range hostNamesFor(l.opts.Nodes) {
		nss = append(nss, nsName(id, h))
	}
	return state{
		RunID: id, World: thisWorld(), Created: time.Now(), Detached: l.opts.Detached,
		Owner: recordOf("owner", "", os.Getpid(), ""), Nodes: l.opts.Nodes, Router: l.opts.Router,
		Namespaces: nss, RootLink: rootLinkName(id),
	}
}

func randomID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, runIDLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

func (l *Lab) addTiming(phase string, since time.Time) {
	took := time.Since(since)
	l.mu.Lock()
	l.timings = append(l.timings, Timing{Phase: phase, Took: took})
	l.mu.Unlock()
	l.log.Info("lab phase done", "phase", phase, "took", took.Round(time.Millisecond))
}

// Logger is the lab's log, for helpers that report their own phases.
func (l *Lab) Logger() *slog.Logger { return l.log }

// Timings of the phases of Start, in order.
func (l *Lab) Timings() []Timing {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Timing(nil), l.timings...)
}

// RunID is the run's short id, part of every name the lab gives.
func (l *Lab) RunID() string { return l.id }

// Dir is the run directory (state, logs, kubeconfigs).
func (l *Lab) Dir() string { return l.dir }

// Options the lab runs with (defaults filled in).
func (l *Lab) Options() Options { return l.opts }

// ns maps a host name to its namespace; "" and "root" are the root
// namespace, and a full namespace name maps to itself.
func (nw *Network) ns(host string) string {
	switch {
	case host == "" || host == Root:
		return ""
	case strings.HasPrefix(host, nsPrefix):
		return host
	}
	return nsName(nw.id, host)
}

// NS is the network namespace of a host ("" for the root namespace), for
// `ip netns exec`.
func (nw *Network) NS(host string) string { return nw.ns(host) }

// resolve checks that host is one of the lab's and returns its namespace.
func (nw *Network) resolve(host string) (string, error) {
	ns := nw.ns(host)
	if ns == "" {
		return "", nil
	}
	for _, h := range nw.hostNames() {
		if nw.ns(h) == ns {
			return ns, nil
		}
	}
	return "", fmt.Errorf("no lab host %q (hosts: %s, or root)", host, strings.Join(nw.hostNames(), ", "))
}

// Nodes of the lab, in order.
func (nw *Network) Nodes() []Node { return append([]Node(nil), nw.nodes...) }

// Node returns the named node.
func (nw *Network) Node(name string) (Node, error) {
	for _, n := range nw.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("no node %q in this %d-node lab", name, len(nw.nodes))
}

// NodeOfMAC names the segment host owning mac ("node2", "router",
// "client"), or "" when it is none of them.
func (nw *Network) NodeOfMAC(mac net.HardwareAddr) string {
	nw.macsMu.Lock()
	defer nw.macsMu.Unlock()
	return nw.macs[mac.String()]
}

// parallel runs f(0..n-1) concurrently and joins the errors.
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
