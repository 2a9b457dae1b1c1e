package members

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// defaultLeaveTimeout bounds Leave when its context has no deadline.
const defaultLeaveTimeout = 5 * time.Second

// Members is this speaker's view of which nodes' speakers are alive. All
// methods are safe for concurrent use.
//
// OnChange runs on a goroutine of its own, never while a lock of this
// package is held and never concurrently with itself. Calls are coalesced:
// a burst of changes may give one call, so OnChange should read Snapshot
// (or State) rather than count calls. It must not call Leave or Shutdown,
// which wait for it.
type Members struct {
	name     string
	log      *slog.Logger
	ml       *memberlist.Memberlist
	book     *book
	hooks    *hooks
	metrics  *metrics
	joiner   *joiner
	welcome  *welcomer
	onChange func()
	// keys are the fingerprints of the keys it runs with, the sending key
	// first (KeyFingerprints).
	keys []string

	kick       chan struct{}
	stopJoins  context.CancelFunc
	stopNotify context.CancelFunc
	wg         sync.WaitGroup

	life     sync.Mutex // serialises Leave and Shutdown
	leaving  bool
	shutdown bool
}

// New starts memberlist on cfg.BindAddr:cfg.BindPort. The node is alone
// until Join is called with the other nodes' addresses.
func New(cfg Config) (*Members, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("members %s: %w", cfg.NodeName, err)
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("members %s: %w", cfg.NodeName, err)
	}
	m := &Members{
		name:     cfg.NodeName,
		log:      cfg.Logger.With("component", "members"),
		book:     newBook(),
		metrics:  met,
		onChange: cfg.OnChange,
		keys:     keyFingerprints(cfg.SecretKey, cfg.OtherKeys),
		kick:     make(chan struct{}, 1),
	}
	dir := newDirectory()
	m.welcome = newWelcomer(cfg.NodeName, m.book, dir, m.log, cfg.WelcomeAfterApplied)
	m.hooks = &hooks{book: m.book, observe: m.observe, dir: dir, welcome: m.welcome, data: bytes.Clone(cfg.NodeData)}
	mlLog := newMemberlistLogger(cfg.Logger.With("component", "memberlist"), m.hooks.suspectedByProbe)
	tr, err := newTransport(cfg.BindAddr, cfg.BindPort, m.log)
	if err != nil {
		return nil, fmt.Errorf("members %s: start memberlist: %w", cfg.NodeName, err)
	}
	mc := cfg.memberlistConfig(m.hooks, mlLog)
	mc.Transport, mc.BindPort, mc.AdvertisePort = tr, tr.port(), tr.port()
	m.ml, err = memberlist.Create(mc)
	if err != nil {
		_ = tr.Shutdown()
		return nil, fmt.Errorf("members %s: start memberlist on %s:%d: %w", cfg.NodeName, cfg.BindAddr, tr.port(), err)
	}
	self := nodeAddrPort(m.ml.LocalNode()) // read once: memberlist rewrites its *Node values (directory.go)
	m.joiner = newJoiner(m.ml, m.log, self, dir, cfg.Timing.RejoinInterval, m.welcome, cfg.WelcomeTimeout, m.changed)
	joinCtx, stopJoins := context.WithCancel(context.Background())
	notifyCtx, stopNotify := context.WithCancel(context.Background())
	m.stopJoins, m.stopNotify = stopJoins, stopNotify
	m.wg.Go(func() { m.joiner.run(joinCtx) })
	m.wg.Go(func() { m.notifyLoop(notifyCtx) })
	m.wg.Go(func() { m.welcome.sendLoop(notifyCtx, m.ml) })
	m.log.Info("member list started", "member", m.name, "address", self.String())
	return m, nil
}

// Join asks to be a member together with these node addresses (IP, or
// IP:port when not on BindPort). Call it with the full set whenever the set
// of Node addresses changes; it returns at once, joins in the background
// the addresses that are not live members, and logs failures. Addresses
// that stay unreachable are retried every Timing.RejoinInterval.
func (m *Members) Join(addrs []string) { m.joiner.request(addrs) }

// Retain forgets the nodes that are Dead or Left and no longer among the
// Node objects (nodes, this one excepted or not), so that a cluster whose
// nodes come and go does not remember every node it ever had. Call it
// when the set of Node names changes.
func (m *Members) Retain(nodes []string) {
	keep := make(map[string]bool, len(nodes)+1)
	for _, n := range nodes {
		keep[n] = true
	}
	keep[m.name] = true
	gone := m.book.retain(keep)
	if len(gone) == 0 {
		return
	}
	m.log.Info("forgot members whose Node is gone", "nodes", gone)
	m.changed()
}

// State returns what this speaker knows about a node. A node seen Dead or
// Left stays so until it is seen Alive again; Unknown means never seen.
func (m *Members) State(node string) State { return m.book.state(node) }

// NodeData returns the data (Config.NodeData) a node last published, nil
// when it published none or was never seen. It is remembered while the
// node is (Dead and Left included, until Retain forgets it). The caller
// must not modify it.
func (m *Members) NodeData(node string) []byte { return m.book.nodeData(node) }

// Snapshot returns the state of every node remembered, this one included.
// Map order is random: sort the names before using them for anything
// visible.
func (m *Members) Snapshot() map[string]State { return m.book.snapshot() }

// Settled reports whether the first Join has been carried out: the
// members reached have welcomed this node (welcome.go) and every address
// has been joined or failed, or Config.WelcomeTimeout has passed since a
// member was first reached (or, reaching none, since the first Join).
// Until then this speaker's view of the others is incomplete and it must
// not claim addresses.
func (m *Members) Settled() bool { return m.joiner.settled.Load() }

// Generation counts the changes of state seen so far. Read it before
// the states a decision is taken from, and pass it to Applied once the
// decision is applied.
func (m *Members) Generation() uint64 { return m.book.generation() }

// Applied tells that a decision taken from states read after Generation
// returned gen has been applied (with Config.WelcomeAfterApplied: the
// members that started since are welcomed once it has; see welcome.go).
func (m *Members) Applied(gen uint64) { m.welcome.setApplied(gen) }

// Leave announces a graceful leave and waits, bounded by ctx (5 s if ctx
// has no deadline), until the announcement has been gossiped: first a
// metadata update with the leaving flag, so every member records Left at
// once (this node too, so it stops claiming), then memberlist's own leave,
// which is queued even when ctx has run out. If ctx runs out before the
// flag has been gossiped, the leave supersedes it and members that missed
// it record Dead instead of Left (they learn of it just as fast, but
// count a failure). Joining stops. Call it first on
// SIGTERM, then withdraw announcements, then Shutdown; a Members that left
// cannot join again (start a new one).
func (m *Members) Leave(ctx context.Context) error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.shutdown {
		return fmt.Errorf("members %s: leave after shutdown", m.name)
	}
	if m.leaving {
		return nil
	}
	m.leaving = true
	m.stopJoins()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultLeaveTimeout)
		defer cancel()
	}
	m.hooks.leaving.Store(true)
	var errs []error
	if err := m.ml.UpdateNode(remaining(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("announce leaving: %w", err))
	}
	if err := m.ml.Leave(remaining(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("leave: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("members %s: %w", m.name, err)
	}
	m.log.Info("left member list", "member", m.name)
	return nil
}

// remaining is the time left on ctx, at least 1 ms: memberlist reads a
// zero timeout as "wait forever", and a late call should still queue its
// message and return at once.
func remaining(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return time.Millisecond
	}
	deadline, _ := ctx.Deadline()
	return max(time.Until(deadline), time.Millisecond)
}

// Shutdown stops memberlist without leaving (others will see this node
// Dead unless Leave ran first) and stops the background goroutines;
// OnChange is not called after it returns. It is idempotent.
func (m *Members) Shutdown() error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.shutdown {
		return nil
	}
	m.shutdown = true
	m.stopJoins()
	m.stopNotify()
	err := m.ml.Shutdown()
	m.wg.Wait()
	if err != nil {
		return fmt.Errorf("members %s: shutdown: %w", m.name, err)
	}
	return nil
}

// observe handles one book change: count a failure, log it, and wake the
// notifier. It runs on memberlist's goroutines, so it only does quick work.
func (m *Members) observe(tr transition, changed bool) {
	if !changed {
		return
	}
	if tr.from == Unknown && (tr.to == Dead || tr.to == Left) {
		// another member's report (reports.go), not a failure seen here
		m.log.Info("member reported gone by another member", "member", tr.node, "state", tr.to.String())
		m.changed()
		return
	}
	level := slog.LevelInfo
	if tr.to == Dead {
		m.metrics.failures.Inc()
		level = slog.LevelWarn
	}
	m.log.Log(context.Background(), level, "member state changed",
		"member", tr.node, "from", tr.from.String(), "to", tr.to.String())
	m.welcome.flush()
	m.changed()
}

func (m *Members) changed() { signal(m.kick) }

// notifyLoop publishes the gauges and calls OnChange after each change.
func (m *Members) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		}
		m.metrics.setCounts(m.book.counts())
		if m.onChange != nil {
			m.onChange()
		}
	}
}
