package speaker

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/internal/l2owner"
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
	// GracefulShutdownWait is how long a node labelled herald.dev/drain
	// keeps its BGP paths, sent with GRACEFUL_SHUTDOWN, before it
	// withdraws them (0: at once). The BGP backend's own setting does the
	// same at SIGTERM.
	GracefulShutdownWait time.Duration
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

// Speaker announces the addresses this node should announce. It wires
// objects with one job each and runs the loop that drives them: what it
// reads of the cluster (cluster), who is alive (liveness), what this node
// answers ARP/NDP for (l2) and the routes it advertises (bgp), its
// SpeakerStatus (status) and its BGP sessions' events (sessions).
type Speaker struct {
	opts    Options
	events  *Events // the backends' reports, consumed by consumeEvents
	log     *slog.Logger
	rec     record.EventRecorder
	metrics *metrics
	queue   workqueue.TypedRateLimitingInterface[string] // reconciles
	leaving atomic.Bool
	ready   readiness // the conditions of Ready

	cluster  *cluster
	liveness *liveness
	l2       *l2Reconciler
	bgp      *bgpReconciler // nil without a BGP backend
	status   *statusReporter
	sessions *sessionReporter

	// reconcileMu serialises reconciles (the worker's and Shutdown's),
	// and guards what they alone read and write below.
	reconcileMu sync.Mutex
	hold        announceHold // the announcement hold last acted on
	// fallbacks are the addresses last logged as announced for the pool
	// their annotation names (noteFallbacks).
	fallbacks string
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
	opts = withDefaults(opts)
	statusName, err := opts.Installation.SpeakerStatus(opts.NodeName)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Speaker{
		opts: opts, events: opts.Events, log: opts.Logger, rec: opts.Recorder, metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker"}),
	}
	if s.rec == nil {
		s.rec = &record.FakeRecorder{}
	}
	s.cluster, err = newCluster(api, statusName, opts.Installation, opts.Namespace, s.log, func() { s.reconcileAfter(objectBatch) })
	if err != nil {
		return nil, err
	}
	if err := s.wire(api, statusName); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills in the options left unset.
func withDefaults(opts Options) Options {
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
	return opts
}

// wire builds the liveness, the reconcilers and the status reporter
// (of the SpeakerStatus statusName) over the cluster's caches.
func (s *Speaker) wire(api *lean.API, statusName string) error {
	opts, c := s.opts, s.cluster
	s.liveness = &liveness{node: opts.NodeName, self: s.up, fence: opts.L2, log: s.log,
		renewer: &leaseRenewer{leases: api.Leases, node: opts.NodeName, duration: 3 * opts.LeaseRenew, now: opts.Now},
		leases:  newLeaseBook(api.Leases, opts.Now, s.Trigger)}
	if opts.Members != nil {
		s.liveness.members.Store(&memberHolder{opts.Members})
	}
	events := serviceEvents{services: c.services, rec: s.rec}
	s.l2 = &l2Reconciler{backend: opts.L2, node: opts.NodeName, grace: opts.ReleaseGrace, liveness: s.liveness,
		leaving: s.leaving.Load, holders: c.svcCache.holdersIn, reconcileAfter: s.reconcileAfter,
		events: events, log: s.log, metrics: s.metrics, now: opts.Now, state: newL2State(), since: map[netip.Addr]time.Time{}}
	if opts.BGP != nil {
		s.bgp = &bgpReconciler{backend: opts.BGP, node: opts.NodeName, nodes: c.nodes, log: s.log, metrics: s.metrics, now: opts.Now,
			vrfs: s.vrfTable, events: events, advert: map[string][]string{},
			drainWait: opts.GracefulShutdownWait, reconcileAfter: s.reconcileAfter}
	}
	pub := &statusPublisher{client: api.SpeakerStatuses, node: opts.NodeName, name: statusName,
		labels: opts.Installation.Labels(), manager: opts.Installation.Writer("herald-speaker"),
		interval: opts.StatusInterval, now: opts.Now, onWrite: s.metrics.statusWrites.Inc}
	s.status = newStatusReporter(pub, c.nodes, s.statusContent)
	s.sessions = &sessionReporter{backend: opts.BGP, peers: c.listers.Peers, node: opts.NodeName, rec: s.rec, log: s.log,
		statusChanged: s.status.changed}
	// Not among the synced informers: announcing never waits for the
	// status object.
	return s.status.watchOwn(c.ownStatus)
}

// Trigger asks for a reconcile (member changes, takeovers seen by L2,
// Lease changes).
func (s *Speaker) Trigger() { s.queue.Add(reconcileKey) }

// reconcileAfter asks for a reconcile once d has passed (at once when d
// is not positive).
func (s *Speaker) reconcileAfter(d time.Duration) { s.queue.AddAfter(reconcileKey, d) }

// Run starts the informers and the event loop (consumeEvents) and
// reconciles until ctx ends. It does not release or withdraw anything:
// call Shutdown for that.
func (s *Speaker) Run(ctx context.Context) error {
	go s.consumeEvents(ctx)
	if !s.cluster.sync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("caches did not sync")
	}
	if s.opts.StartMembers != nil {
		ml, err := s.opts.StartMembers(ctx, s.cluster.listers.Secrets)
		if err != nil {
			return fmt.Errorf("member list: %w", err)
		}
		s.liveness.members.Store(&memberHolder{ml})
		if kf, ok := ml.(keyFingerprinter); ok {
			s.liveness.renewer.keys = strings.Join(kf.KeyFingerprints(), ",")
		}
	}
	s.ready.synced.Store(true)
	s.log.Info("caches synced; announcing")
	go s.liveness.renewer.run(ctx, s.opts.LeaseRenew, func(err error) {
		if err != nil {
			s.log.Warn("liveness Lease not renewed", "error", err)
		}
		setErr(&s.ready.leaseErr, "liveness Lease not renewed", err)
	})
	go s.liveness.leases.run(ctx, s.opts.LeaseRenew)
	go s.checkKeys(ctx, s.opts.LeaseRenew)
	s.Trigger()
	go s.sessions.watch(ctx, 3*time.Second)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		s.status.queue.ShutDown()
	}()
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		for s.processNext(ctx, s.status.queue, func(ctx context.Context, _ string) error { return s.status.publish(ctx, false) }) {
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
	if ml := s.liveness.memberList(); ml != nil {
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
		if err := s.liveness.renewer.release(ctx); err != nil {
			s.log.Warn("deleting the liveness Lease", "error", err)
		}
	}
	wg.Wait()
	if s.ready.synced.Load() {
		// The status says what is left: nothing, once handed over and
		// withdrawn (one write, past the rate limit).
		if err := s.status.publish(ctx, true); err != nil {
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
		if s.l2.announcedCount() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// up says whether this node's speaker takes part: synced and not
// leaving.
func (s *Speaker) up() bool { return s.ready.synced.Load() && !s.leaving.Load() }
