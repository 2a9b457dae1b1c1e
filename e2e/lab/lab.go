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

	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/internal/labkit"
	"github.com/herald-lb/herald/internal/testenv"
)

// Lab is a running lab: namespaces, router, control plane, kube-proxy and
// pod servers. Its methods are safe for concurrent use.
type Lab struct {
	opts  Options
	log   *slog.Logger
	id    string
	dir   string
	lock  *machineLock
	state *stateFile
	nodes []Node
	// macs maps a segment MAC to its host (router, client, nodeN).
	macs map[string]string
	bin  binaries
	repo string

	cp              *testenv.ControlPlane
	kube            kubernetes.Interface
	adminKubeconfig string
	proxyKubeconfig string

	mu      sync.Mutex
	procs   []*Process   // running, in start order
	history []procRecord // every process ever started, for Leftovers
	router  *routerRun
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
	l := &Lab{opts: opts, log: opts.Logger, macs: map[string]string{}}
	if err := l.prepare(ctx); err != nil {
		l.lock.release()
		return nil, err
	}
	if err := l.setup(ctx); err != nil {
		l.log.Error("lab start failed; removing it", "run", l.id, "err", err)
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
	l.addTiming("preflight", start)
	return nil
}

func (l *Lab) makeRunDir() error {
	l.id = l.opts.RunID
	for l.id == "" {
		id := randomID()
		if _, err := os.Stat(filepath.Join(l.opts.StateRoot, id)); os.IsNotExist(err) {
			l.id = id
		}
	}
	l.dir = filepath.Join(l.opts.StateRoot, l.id)
	if err := os.MkdirAll(filepath.Join(l.dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	if err := os.Chmod(l.dir, 0o755); err != nil { // FRR drops to user frr
		return err
	}
	for i := 1; i <= l.opts.Nodes; i++ {
		l.nodes = append(l.nodes, newNode(i, l.id))
	}
	var nss []string
	for _, h := range l.hostNames() {
		nss = append(nss, l.ns(h))
	}
	var err error
	l.state, err = newStateFile(l.dir, state{
		RunID: l.id, Created: time.Now(), Detached: l.opts.Detached,
		Owner: recordOf("owner", "", os.Getpid(), ""), Nodes: l.opts.Nodes, Router: l.opts.Router,
		Namespaces: nss, RootLink: rootLinkName(l.id),
	})
	return err
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
func (l *Lab) ns(host string) string {
	switch {
	case host == "" || host == Root:
		return ""
	case strings.HasPrefix(host, nsPrefix):
		return host
	}
	return nsName(l.id, host)
}

// NS is the network namespace of a host ("" for the root namespace), for
// `ip netns exec`.
func (l *Lab) NS(host string) string { return l.ns(host) }

// resolve checks that host is one of the lab's and returns its namespace.
func (l *Lab) resolve(host string) (string, error) {
	ns := l.ns(host)
	if ns == "" {
		return "", nil
	}
	for _, h := range l.hostNames() {
		if l.ns(h) == ns {
			return ns, nil
		}
	}
	return "", fmt.Errorf("no lab host %q (hosts: %s, or root)", host, strings.Join(l.hostNames(), ", "))
}

// Nodes of the lab, in order.
func (l *Lab) Nodes() []Node { return append([]Node(nil), l.nodes...) }

// Node returns the named node.
func (l *Lab) Node(name string) (Node, error) {
	for _, n := range l.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("no node %q in this %d-node lab", name, len(l.nodes))
}

// NodeOfMAC names the segment host owning mac ("node2", "router",
// "client"), or "" when it is none of them.
func (l *Lab) NodeOfMAC(mac net.HardwareAddr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.macs[mac.String()]
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
