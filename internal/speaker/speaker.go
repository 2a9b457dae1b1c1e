package speaker

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/internal/service"
)

// Options configure a speaker.
type Options struct {
	// NodeName is the node this speaker runs on.
	NodeName string
	// Namespace is Herald's namespace (BGP password Secrets live there).
	Namespace string
	Class     service.Class
	// L2, BGP and Members are the backends; a nil L2 or BGP backend
	// disables that mode, a nil Members counts every node as alive.
	L2      L2
	BGP     BGP
	Members Liveness
	// ReleaseGrace bounds how long a node that lost an address keeps
	// answering for it while waiting for the new owner to announce itself
	// (default 2 s).
	ReleaseGrace time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
	Recorder     record.EventRecorder
}

// Speaker announces the addresses this node should announce.
type Speaker struct {
	opts    Options
	log     *slog.Logger
	rec     record.EventRecorder
	metrics *metrics

	kubeInformers   informers.SharedInformerFactory
	secretInformers informers.SharedInformerFactory
	heraldInformers heraldinformers.SharedInformerFactory
	services        corelisters.ServiceLister
	slices          discoverylisters.EndpointSliceLister
	sliceIndex      cache.Indexer
	nodes           corelisters.NodeLister
	listers         k8s.ConfigListers
	synced          []cache.InformerSynced

	queue   workqueue.TypedRateLimitingInterface[string]
	leaving atomic.Bool

	mu        sync.Mutex // guards the reconcile state below
	l2        l2State
	bgpAdvert map[string][]string // Service -> routes it is advertised with, for events
	lastBGP   error
	// bgpApplied: the BGP backend has had a decision applied; memo says
	// whether the next one can differ.
	bgpApplied bool
	memo       *decisionMemo
	joined     string // node addresses last handed to Join
	retained   string // Node names last handed to Retain
}

const reconcileKey = "reconcile"

// New wires a speaker; Run starts it.
func New(kube kubernetes.Interface, herald versioned.Interface, opts Options) (*Speaker, error) {
	if opts.NodeName == "" {
		return nil, fmt.Errorf("speaker: the node name is required (--node-name or $NODE_NAME)")
	}
	if opts.ReleaseGrace == 0 {
		opts.ReleaseGrace = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Speaker{
		opts: opts, log: opts.Logger, rec: opts.Recorder, metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker"}),
		l2:        newL2State(),
		bgpAdvert: map[string][]string{},
		memo:      newDecisionMemo(),
	}
	if s.rec == nil {
		s.rec = &record.FakeRecorder{}
	}
	if err := s.setupInformers(kube, herald); err != nil {
		return nil, err
	}
	return s, nil
}

// Trigger asks for a reconcile (member changes, hand-over confirmations).
func (s *Speaker) Trigger() { s.queue.Add(reconcileKey) }

// Yielded records that another node took over an address this node was
// handing over (the L2 backend saw its gratuitous announcement).
func (s *Speaker) Yielded(ip netip.Addr) {
	s.mu.Lock()
	s.l2.yielded(ip)
	s.mu.Unlock()
	s.Trigger()
}

// Run starts the informers and reconciles until ctx ends. It does not
// hand over or withdraw anything: call Shutdown for that.
func (s *Speaker) Run(ctx context.Context) error {
	s.kubeInformers.Start(ctx.Done())
	s.secretInformers.Start(ctx.Done())
	s.heraldInformers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("caches did not sync")
	}
	s.log.Info("caches synced; announcing")
	s.Trigger()
	go s.watchSessions(ctx, 3*time.Second)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for s.processNext(ctx) {
	}
	return nil
}

func (s *Speaker) processNext(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	if err := s.reconcile(ctx); err != nil {
		s.log.Warn("reconcile failed; retrying", "error", err)
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
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
	if s.opts.Members != nil {
		// The others learn of the leave within tens of milliseconds; do not
		// wait the full broadcast timeout when they are stopping too.
		leaveCtx, cancel := context.WithTimeout(ctx, time.Second)
		if err := s.opts.Members.Leave(leaveCtx); err != nil {
			s.log.Warn("leaving the member list", "error", err)
		}
		cancel()
	}
	s.waitHandedOver(ctx)
	wg.Wait()
	s.log.Info("shut down")
}

// waitHandedOver reconciles until no address is being handed over any more
// (each was taken over, or its grace period ended).
func (s *Speaker) waitHandedOver(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.reconcile(ctx); err != nil {
			s.log.Warn("reconcile during hand-over", "error", err)
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

// live says whether a node's speaker counts as alive: this node unless it
// is leaving; others unless the member list saw them die or leave. A node
// the member list never saw falls back to its Kubernetes state (its
// eligibility), never to "everyone announces".
func (s *Speaker) live(node string) bool {
	if node == s.opts.NodeName {
		return !s.leaving.Load()
	}
	if s.opts.Members == nil {
		return true
	}
	switch s.opts.Members.State(node) {
	case members.Dead, members.Left:
		return false
	}
	return true
}
