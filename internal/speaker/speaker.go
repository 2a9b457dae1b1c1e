package speaker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/internal/l2owner"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/internal/vrf"
)

// Options configure a speaker.
type Options struct {
	// NodeName is the node this speaker runs on.
	NodeName string
	// Namespace is Herald's namespace (BGP password Secrets live there).
	Namespace string
	Class     service.Class
	// Installation is this installation's name when several share the
	// cluster ("": the default one); it must match the controller's. The
	// speaker reads only the configuration objects labelled as its own,
	// and writes its SpeakerStatus under installation.SpeakerStatus's name.
	Installation installation.Name
	// Eligibility are the options of which nodes may announce
	// (--ignore-exclude-lb); they must match the controller's.
	Eligibility announce.Eligibility
	// L2, BGP and Members are the backends; a nil L2 or BGP backend
	// disables that mode. Members may instead be started by StartMembers
	// once the caches have synced, so that a speaker that cannot sync
	// never becomes a member others hand addresses to; it is given the
	// synced Secrets of Herald's namespace (the member-list key's
	// Secret). Without a member list, liveness comes from the Leases
	// alone.
	L2           L2
	BGP          BGP
	Members      Liveness
	StartMembers func(ctx context.Context, secrets corelisters.SecretNamespaceLister) (Liveness, error)
	// Events is where the backends publish what they report (wire their
	// callbacks to it before New); Run consumes it. Nil: a queue of the
	// speaker's own, which nothing publishes to.
	Events *Events
	// LeaseRenew is how often this speaker renews its liveness Lease
	// (LeaseName) once synced; the Lease lasts three renewals (default
	// DefaultLeaseRenew).
	LeaseRenew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// PodName is this speaker's Pod, shown in its SpeakerStatus.
	PodName string
	// StatusInterval is the least time between two writes of this node's
	// SpeakerStatus (default DefaultStatusInterval); changes within it
	// are coalesced.
	StatusInterval time.Duration
	// ReleaseGrace bounds how long a node that lost an address keeps
	// answering for it while waiting for the new owner to announce itself
	// (default 2 s).
	ReleaseGrace time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
	Recorder     record.EventRecorder

	// VRFs is the node's VRFs as last read, for BGP sessions bound to
	// one (nil: such sessions are refused); call Trigger when they change.
	VRFs func() (vrf.Table, error)
}

// Speaker announces the addresses this node should announce.
type Speaker struct {
	opts    Options
	events  *Events // the backends' reports, consumed by consumeEvents
	log     *slog.Logger
	rec     record.EventRecorder
	metrics *metrics

	informers    []cache.SharedIndexInformer // all of them, started by Run
	serviceIndex cache.Indexer
	services     corelisters.ServiceLister
	slices       discoverylisters.EndpointSliceLister
	sliceIndex   cache.Indexer
	nodes        corelisters.NodeLister
	holdLeases   coordinationlisters.LeaseNamespaceLister
	listers      k8s.ConfigListers
	lastGood     *config.LastGood // keeps refused edits' last valid versions in force
	svcCache     *serviceCache    // Services converted for announce
	synced       []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// statusQueue publishes the SpeakerStatus, apart from the reconciles
	// so that a slow API server never delays announcing.
	statusQueue workqueue.TypedRateLimitingInterface[string]
	status      *statusPublisher
	leaving     atomic.Bool
	// ready tracks the conditions of Ready.
	ready   readiness
	members atomic.Pointer[memberHolder]
	// isolated: the member list sees no other node alive (observeLiveness).
	isolated atomic.Bool
	// claimFrom (unix ns): no new L2 claims before then (healSettle).
	claimFrom atomic.Int64
	// deadBefore: the nodes the member list saw dead at the last
	// reconcile; rejoined: one of them is a member again since the last
	// liftFences (noteRejoins).
	deadMu     sync.Mutex
	deadBefore []string
	rejoined   bool
	// upBefore: the other nodes up at the last reconcile; aloneByLeave:
	// none is up since the last of them left gracefully (noteAlone).
	upBefore     []string
	aloneByLeave bool
	// speakerMACs: the set last handed to the L2 backend (macsKey).
	speakerMACs string
	renewer     *leaseRenewer
	leases      *leaseBook

	mu             sync.Mutex // guards the reconcile state below
	l2             l2State
	l2Memo         announce.L2Memo     // the L2 decisions of the last reconcile, per address
	bgpMemo        announce.BGPMemo    // the BGP decision of the last reconcile
	bgpAdvert      map[string][]string // Service -> routes it is advertised with, for events
	bgpAdvertising bool                // the BGP memo's routes are advertised (not held, not leaving)
	ownNodeGone    bool                // this node's Node object was not found at the last BGP reconcile
	bgpPending     announce.Changes    // Service changes that have not reached the BGP memo
	hold           announceHold        // the announcement hold last acted on
	l2Since        map[netip.Addr]time.Time
	lastBGP        error
	// reconcileMu serialises reconciles: the worker's and Shutdown's.
	reconcileMu sync.Mutex
	// bgpApplied is what the last BGP Apply was given besides the memo's
	// result, when it succeeded outside a hold (ok): a reconcile that
	// would give it the same skips it.
	bgpApplied bgpApplied
	joined     string // node addresses last handed to Join
	// fallbacks are the addresses last logged as announced for the pool
	// their annotation names (noteFallbacks).
	fallbacks string
	retained  string // Node names last handed to Retain
}

const (
	reconcileKey = "reconcile"
	statusKey    = "status"
)

// New wires a speaker; Run starts it.
func New(api *lean.API, opts Options) (*Speaker, error) {
	if opts.NodeName == "" {
		return nil, fmt.Errorf("speaker: the node name is required (--node-name or $NODE_NAME)")
	}
	if opts.ReleaseGrace == 0 {
		opts.ReleaseGrace = l2owner.ReleaseGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LeaseRenew == 0 {
		opts.LeaseRenew = DefaultLeaseRenew
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = DefaultStatusInterval
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.Events == nil {
		opts.Events = NewEvents()
	}
	statusName, err := opts.Installation.SpeakerStatus(opts.NodeName)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Speaker{
		opts: opts, events: opts.Events, log: opts.Logger, rec: opts.Recorder, metrics: m, lastGood: config.NewLastGood(), svcCache: newServiceCache(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker"}),
		statusQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker-status"}),
		status: &statusPublisher{client: api.SpeakerStatuses, node: opts.NodeName, name: statusName,
			labels: opts.Installation.Labels(), manager: opts.Installation.Writer("herald-speaker"),
			interval: opts.StatusInterval, now: opts.Now},
		l2:        newL2State(),
		bgpAdvert: map[string][]string{},
		l2Since:   map[netip.Addr]time.Time{},
	}
	s.status.onWrite = m.statusWrites.Inc
	if s.rec == nil {
		s.rec = &record.FakeRecorder{}
	}
	if opts.Members != nil {
		s.members.Store(&memberHolder{opts.Members})
	}
	s.renewer = &leaseRenewer{leases: api.Leases, node: opts.NodeName, duration: 3 * opts.LeaseRenew, now: opts.Now}
	s.leases = newLeaseBook(api.Leases, opts.Now, s.Trigger)
	if err := s.setupInformers(api); err != nil {
		return nil, err
	}
	return s, nil
}

// syncCaches starts the informers until ctx ends and waits for the ones
// announcing needs to sync; false means ctx ended first.
func (s *Speaker) syncCaches(ctx context.Context) bool {
	for _, inf := range s.informers {
		go inf.RunWithContext(ctx)
	}
	return k8s.WaitForCacheSync(ctx, s.synced...)
}

// Trigger asks for a reconcile (member changes, takeovers seen by L2,
// Lease changes).
func (s *Speaker) Trigger() { s.queue.Add(reconcileKey) }

// Yielded records that another node took over an address this node was
// releasing (the L2 backend's machine yielded to it, see
// internal/l2owner). The backend stops answering on the interface where
// it saw it; the release ends only once no interface still answers (an
// address announced on two links is taken over on each separately).
func (s *Speaker) Yielded(ip netip.Addr) {
	if s.opts.L2 != nil && len(s.opts.L2.Interfaces(ip)) > 0 {
		return
	}
	s.mu.Lock()
	s.l2.yielded(ip)
	s.mu.Unlock()
	s.Trigger()
}

// Conflict records, as a Warning event on the Services holding vip, that
// another host (MAC by) announced an address this node announces, and what
// the L2 fence decided: won (this node keeps answering) or lost (it
// stopped). The event loop calls it for Events.Conflict.
func (s *Speaker) Conflict(vip netip.Addr, iface string, by net.HardwareAddr, won bool) {
	s.mu.Lock()
	o, ok := s.l2.owned[vip]
	s.mu.Unlock()
	if !ok {
		return
	}
	verdict := "lost the tie-break and stopped answering"
	if won {
		verdict = "won the tie-break and keeps answering"
	}
	for _, key := range o.Services {
		if svc := s.service(key); svc != nil {
			s.rec.Eventf(svc, corev1.EventTypeWarning, "AddressConflict",
				"node %s and another host (MAC %s) both announce %s on %s: node %s %s (split brain: check that the speakers reach each other on the member-list port)",
				s.opts.NodeName, by, vip, iface, s.opts.NodeName, verdict)
		}
	}
}

// ForeignClaim records, as a Warning event on the Services holding vip,
// that a host that is no other speaker's node (MAC by) announced an
// address this node announces, and that this node kept answering and
// announced it again. The event loop calls it for Events.ForeignClaim.
func (s *Speaker) ForeignClaim(vip netip.Addr, iface string, by net.HardwareAddr) {
	s.mu.Lock()
	o, ok := s.l2.owned[vip]
	s.mu.Unlock()
	if !ok {
		return
	}
	for _, key := range o.Services {
		if svc := s.service(key); svc != nil {
			s.rec.Eventf(svc, corev1.EventTypeWarning, "ForeignAddressClaim",
				"a host that runs no Herald speaker (MAC %s) announces %s on %s: node %s keeps answering and announced it again (a misconfigured host with this address, or an attempt to take it over)",
				by, vip, iface, s.opts.NodeName)
		}
	}
}

// Run starts the informers and the event loop (consumeEvents) and
// reconciles until ctx ends. It does not release or withdraw anything:
// call Shutdown for that.
func (s *Speaker) Run(ctx context.Context) error {
	go s.consumeEvents(ctx)
	if !s.syncCaches(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("caches did not sync")
	}
	if s.opts.StartMembers != nil {
		ml, err := s.opts.StartMembers(ctx, s.listers.Secrets)
		if err != nil {
			return fmt.Errorf("member list: %w", err)
		}
		s.members.Store(&memberHolder{ml})
		if kf, ok := ml.(keyFingerprinter); ok {
			s.renewer.keys = strings.Join(kf.KeyFingerprints(), ",")
		}
	}
	s.ready.synced.Store(true)
	s.log.Info("caches synced; announcing")
	go s.renewer.run(ctx, s.opts.LeaseRenew, func(err error) {
		if err != nil {
			s.log.Warn("liveness Lease not renewed", "error", err)
		}
		setErr(&s.ready.leaseErr, "liveness Lease not renewed", err)
	})
	go s.leases.run(ctx, s.opts.LeaseRenew)
	go s.checkKeys(ctx, s.opts.LeaseRenew)
	s.Trigger()
	go s.watchSessions(ctx, 3*time.Second)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		s.statusQueue.ShutDown()
	}()
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		for s.processNext(ctx, s.statusQueue, func(ctx context.Context, _ string) error { return s.publishStatus(ctx, false) }) {
		}
	}()
	for s.processNext(ctx, s.queue, func(ctx context.Context, _ string) error { return s.reconcile(ctx) }) {
	}
	<-statusDone
	return nil
}

// processNext handles one key of a queue: Forget on success; on error
// the one error handler (handleError) and a rate-limited retry. It
// returns false when the queue shuts down.
func (s *Speaker) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	if key == reconcileKey && ctx.Err() == nil {
		setErr(&s.ready.reconcileErr, "reconcile failing (retried with backoff)", err)
	}
	if err != nil {
		s.handleError(ctx, key, err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// handleError logs a failed sync (reconcile or status) and counts it
// (herald_speaker_sync_errors_total{sync}); the caller retries with
// backoff.
func (s *Speaker) handleError(ctx context.Context, key string, err error) {
	s.metrics.syncErrors.WithLabelValues(key).Inc()
	if ctx.Err() != nil {
		return
	}
	s.log.Warn(key+" failed; retrying with backoff", "sync", key, "error", err)
}

// Shutdown hands the node's L2 addresses over to the other nodes, leaves
// the member list and withdraws every BGP route before closing the
// sessions, all bounded by ctx. Run's context should end after it.
func (s *Speaker) Shutdown(ctx context.Context) {
	s.log.Info("shutting down: handing addresses over")
	s.leaving.Store(true)
	if err := s.reconcile(ctx); err != nil {
		s.log.Warn("last reconcile failed", "error", err)
	}
	var wg sync.WaitGroup
	if s.opts.BGP != nil {
		wg.Go(func() {
			if err := s.opts.BGP.Shutdown(ctx); err != nil {
				s.log.Warn("BGP shutdown", "error", err)
			}
		})
	}
	if ml := s.memberList(); ml != nil {
		// The others learn of the leave within tens of milliseconds; do not
		// wait the full broadcast timeout when they are stopping too.
		leaveCtx, cancel := context.WithTimeout(ctx, time.Second)
		if err := ml.Leave(leaveCtx); err != nil {
			s.log.Warn("leaving the member list", "error", err)
		}
		cancel()
	}
	s.waitHandedOver(ctx)
	if s.ready.synced.Load() {
		// The Lease goes with the speaker, so that no node reads it as
		// alive for the rest of its duration.
		if err := s.renewer.release(ctx); err != nil {
			s.log.Warn("deleting the liveness Lease", "error", err)
		}
	}
	wg.Wait()
	if s.ready.synced.Load() {
		// The status says what is left: nothing, once handed over and
		// withdrawn (one write, past the rate limit).
		if err := s.publishStatus(ctx, true); err != nil {
			s.log.Warn("last SpeakerStatus write", "error", err)
		}
	}
	s.log.Info("shut down")
}

// waitHandedOver reconciles until no address is being handed over any more
// (each was taken over, or its grace period ended).
func (s *Speaker) waitHandedOver(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.reconcile(ctx); err != nil {
			s.log.Warn("reconcile while releasing the addresses", "error", err)
		}
		s.mu.Lock()
		n := s.l2.announcedCount()
		s.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// memberHolder lets the member list be stored once it has started.
type memberHolder struct{ Liveness }

// memberList returns the member list, nil before it started or without one.
func (s *Speaker) memberList() Liveness {
	if h := s.members.Load(); h != nil {
		return h.Liveness
	}
	return nil
}

// live says whether a node's speaker is known to be up, from two sources:
//   - this node: once synced, unless it is leaving;
//   - alive (or suspect) in the member list: up; left: down (it said so);
//   - seen dead in the member list (by this speaker, or by a member that
//     reported it: internal/members' reports): down, unless this node is
//     cut off from every other member (see isolated): then up until its
//     Lease has been read, and afterwards only once the Lease has been
//     renewed since (its speaker is alive on the other side of a
//     partition);
//   - never seen by the member list (or no member list): its Lease
//     decides: renewed within its duration. A node whose Lease was never
//     read is down: never "alive because never heard of".
func (s *Speaker) live(node string) bool {
	if node == s.opts.NodeName {
		return s.ready.synced.Load() && !s.leaving.Load()
	}
	ml := s.memberList()
	state := members.Unknown
	if ml != nil {
		state = ml.State(node)
	}
	switch state {
	case members.Alive, members.Suspect:
		return true
	case members.Left:
		return false
	case members.Dead:
		if !s.isolated.Load() {
			return false
		}
		// Cut off from every other member, this node cannot tell a
		// dead member from one it no longer hears. Until that member's
		// Lease has been read it keeps its addresses (taking them would
		// claim every address the moment the member list went quiet);
		// then it is up only if its speaker renews the Lease: one that
		// died stopped renewing it, though the Lease stays fresh for its
		// duration (15 s), and its addresses must not stay dark so long.
		return s.leases.unread(node) || s.leases.renewed(node)
	}
	return s.leases.alive(node)
}
