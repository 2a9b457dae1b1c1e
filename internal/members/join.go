package members

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// joinParallelism bounds concurrent join attempts; the first success
// brings in every live member by push/pull, so later ones mostly skip.
const joinParallelism = 4

// directJoinLimit bounds the first round's state exchange with every
// address: beyond it (large clusters) the first round joins only
// addresses that are not members yet, and gossip tells the rest.
const directJoinLimit = 64

// joiner keeps this node in one member list with every address it was
// given: it joins those that are not live members, when the set changes
// and again every RejoinInterval (which also heals partitions: memberlist
// never probes dead members again on its own).
type joiner struct {
	ml          *memberlist.Memberlist
	log         *slog.Logger
	self        netip.AddrPort // this node's address
	dir         *directory
	defaultPort uint16
	interval    time.Duration
	// welcome greets the members once the first round has reached one
	// and waits, at most welcomeTimeout, for them to act on this node's
	// arrival (see start and welcome.go).
	welcome        *welcomer
	welcomeTimeout time.Duration
	onSettled      func()
	wake           chan struct{}
	settled        atomic.Bool

	mu        sync.Mutex
	desired   []netip.AddrPort
	requested bool
	failing   map[netip.AddrPort]bool
}

func newJoiner(ml *memberlist.Memberlist, log *slog.Logger, self netip.AddrPort, dir *directory, interval time.Duration, w *welcomer, welcomeTimeout time.Duration, onSettled func()) *joiner {
	return &joiner{
		ml: ml, log: log, self: self, dir: dir, defaultPort: self.Port(), interval: interval, welcome: w, welcomeTimeout: welcomeTimeout, onSettled: onSettled,
		wake:    make(chan struct{}, 1),
		failing: make(map[netip.AddrPort]bool),
	}
}

// request replaces the wanted address set and wakes the join loop.
// Unparsable addresses are logged and skipped.
func (j *joiner) request(addrs []string) {
	parsed := make([]netip.AddrPort, 0, len(addrs))
	for _, s := range addrs {
		ap, err := parseJoinAddr(s, j.defaultPort)
		if err != nil {
			j.log.Warn("ignoring member address", "error", err)
			continue
		}
		parsed = append(parsed, ap)
	}
	slices.SortFunc(parsed, netip.AddrPort.Compare)
	j.mu.Lock()
	j.desired, j.requested = slices.Compact(parsed), true
	j.mu.Unlock()
	signal(j.wake)
}

func parseJoinAddr(s string, defaultPort uint16) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("member address %q: want an IP address or IP:port", s)
	}
	return netip.AddrPortFrom(a.Unmap(), defaultPort), nil
}

// run joins on every request and every interval until ctx ends.
func (j *joiner) run(ctx context.Context) {
	tick := time.NewTicker(j.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-j.wake:
		case <-tick.C:
		}
		j.round(ctx)
	}
}

// round tries every wanted address that is not a live member, at most
// joinParallelism at a time. The first round after the first request is
// start's.
func (j *joiner) round(ctx context.Context) {
	j.mu.Lock()
	desired, requested := j.desired, j.requested
	for ap := range j.failing {
		if _, found := slices.BinarySearchFunc(desired, ap, netip.AddrPort.Compare); !found {
			delete(j.failing, ap)
		}
	}
	j.mu.Unlock()
	if !requested {
		return
	}
	if !j.settled.Load() {
		j.start(ctx, desired)
		return
	}
	inParallel(desired, joinParallelism, func(ap netip.AddrPort) {
		if ctx.Err() == nil {
			j.joinOne(ap, false)
		}
	})
}

// startJoinParallelism bounds the first round's concurrent joins: every
// address (up to this many) is tried at once, so that no address that
// answers waits behind one that accepts a connection and never answers
// (each such join costs Timing.StreamTimeout).
const startJoinParallelism = directJoinLimit

// start is the first round, which settles the joiner whatever its
// outcome. It exchanges state with every wanted address (up to
// directJoinLimit of them), live member or not, so that each peer merges
// this node directly rather than through gossip tens of milliseconds
// later, and greets the members (welcome.go: each must have acted on
// this node's arrival before it settles).
//
// The joins never delay the greeting. It starts as soon as a join
// succeeds or any other member is known: from then on a peer may see
// this node alive and act on it, and this node must settle within
// welcomeTimeout of that (the user of the member list bounds how long
// a peer's action on the arrival waits for it), however many addresses
// hang. The greeting also waits for the joins
// still running, since one may bring a member nobody told this node of,
// but no longer than that. A node that reaches nobody within
// welcomeTimeout settles alone; its joins go on and later rounds retry
// the addresses that failed.
func (j *joiner) start(ctx context.Context, desired []netip.AddrPort) {
	direct := len(desired) <= directJoinLimit
	joined := make(chan struct{}, 1)
	done := make(chan struct{})
	var running atomic.Int64
	running.Store(int64(len(desired)))
	go func() {
		defer close(done)
		inParallel(desired, startJoinParallelism, func(ap netip.AddrPort) {
			defer running.Add(-1)
			if ctx.Err() == nil && j.joinOne(ap, direct) {
				signal(joined)
			}
		})
	}()
	// The next round starts from the outcome of these joins, never
	// beside them (it would join a hung address twice).
	defer func() { <-done }()
	var greeted int
	var silent []string
	if j.awaitOthers(ctx, joined, done) {
		greeted, silent = j.welcome.greet(ctx, j.ml, time.Now().Add(j.welcomeTimeout), done)
	}
	if ctx.Err() != nil {
		return
	}
	// logged first, so that whoever sees Settled finds the line
	j.log.Info("member list settled", "addresses", len(desired), "members", j.ml.NumMembers(),
		"greeted", greeted, "notWelcomed", silent, "joinsRunning", running.Load())
	j.settled.Store(true)
	j.onSettled()
}

// awaitOthers waits until a join succeeded or another member is known
// (it joined this node), or every join has returned: then it reports
// true, the greeting is due. It reports false when ctx ends or nobody
// has been reached within welcomeTimeout.
func (j *joiner) awaitOthers(ctx context.Context, joined, done <-chan struct{}) bool {
	timeout := time.NewTimer(j.welcomeTimeout)
	defer timeout.Stop()
	for !j.dir.hasOther(j.welcome.name) {
		select {
		case <-ctx.Done():
			return false
		case <-timeout.C:
			return j.dir.hasOther(j.welcome.name)
		case <-joined:
			return true
		case <-done:
			return true
		case <-j.dir.changed:
		}
	}
	return true
}

// joinOne joins one address unless it is this node or (unless direct)
// already a live member, and reports whether it joined. A failure is
// logged at Warn once, then at Debug until it heals.
func (j *joiner) joinOne(ap netip.AddrPort, direct bool) bool {
	if j.isSelf(ap) || (!direct && j.isMember(ap)) {
		return false
	}
	_, err := j.ml.Join([]string{ap.String()})
	j.mu.Lock()
	wasFailing := j.failing[ap]
	j.failing[ap] = err != nil
	j.mu.Unlock()
	switch {
	case err != nil && !wasFailing:
		j.log.Warn("cannot join member", "address", ap.String(), "error", err)
	case err != nil:
		j.log.Debug("cannot join member", "address", ap.String(), "error", err)
	default:
		j.log.Info("joined member", "address", ap.String(), "members", j.ml.NumMembers())
	}
	return err == nil
}

// isSelf: the address is this node's.
func (j *joiner) isSelf(ap netip.AddrPort) bool { return j.self == ap }

// isMember: the address is this node or an alive or suspect member.
func (j *joiner) isMember(ap netip.AddrPort) bool { return j.isSelf(ap) || j.dir.hasAddr(ap) }

func nodeAddrPort(n *memberlist.Node) netip.AddrPort {
	a, ok := netip.AddrFromSlice(n.Addr)
	if !ok {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(a.Unmap(), n.Port)
}

// inParallel runs do for every item, at most parallel at a time.
func inParallel[T any](items []T, parallel int, do func(T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range min(parallel, len(items)) {
		wg.Go(func() {
			for it := range work {
				do(it)
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}
