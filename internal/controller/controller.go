package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldinformers "github.com/herald-lb/herald/api/generated/informers/externalversions"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/allocator"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/controller/announced"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/leader"
	"github.com/herald-lb/herald/internal/service"
)

// FieldManager is the field manager of the default installation's
// controller; another installation's is FieldManager-<installation>.
const FieldManager = "herald-controller"

// Options configure the controller.
type Options struct {
	// Class says which Services are Herald's.
	Class service.Class
	// Annotations says whether MetalLB's Service annotations are read where
	// Herald's are absent (the zero value: they are).
	Annotations service.Annotations
	// Eligibility are the options of which nodes may announce
	// (--ignore-exclude-lb), for the Announced condition.
	Eligibility announce.Eligibility
	// Namespace is Herald's own namespace (BGP password Secrets live there).
	Namespace string
	// Installation is this installation's name when several share the
	// cluster ("": the default one): it reads only the configuration
	// objects and SpeakerStatuses labelled as its own, and writes under a
	// field manager of its own.
	Installation installation.Name
	// MemberlistSecret is the Secret holding the speakers' member-list key,
	// created with a random key when missing; empty disables that. Run
	// keeps it (MemberlistKeeper); a binary with leader election runs
	// a MemberlistKeeper itself in every replica instead.
	MemberlistSecret string
	// ReleaseHold is how long an address a Service gave up is held back
	// before it is handed out again (0: free as soon as the Service's
	// status no longer shows it).
	ReleaseHold time.Duration
	// Workers is the number of Services synced in parallel (default 16).
	Workers    int
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Recorder   record.EventRecorder
}

// Controller allocates addresses to Services.
type Controller struct {
	opts    Options
	log     *slog.Logger
	kube    kubernetes.Interface
	herald  versioned.Interface
	rec     record.EventRecorder
	metrics *metrics
	manager string // the field manager of its writes (Options.Installation)

	kubeInformers   informers.SharedInformerFactory
	lightInformers  informers.SharedInformerFactory // objects without managed fields
	secretInformers informers.SharedInformerFactory
	heraldInformers heraldinformers.SharedInformerFactory
	leaseInformers  informers.SharedInformerFactory // the speakers' liveness Leases
	services        corelisters.ServiceLister
	serviceIndex    cache.Indexer // Services by ingress IP (servicesByIngressIP)
	namespaces      corelisters.NamespaceLister
	nodes           corelisters.NodeLister
	sliceIndex      cache.Indexer
	speakerIndex    cache.Indexer // SpeakerStatuses by what they announce
	leases          coordinationlisters.LeaseNamespaceLister
	secrets         corelisters.SecretLister
	listers         k8s.ConfigListers
	lastGood        *config.LastGood // keeps refused edits' last valid versions in force
	synced          []cache.InformerSynced
	notices         metallbNotices

	serviceQueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// annotationQueue writes the pool annotation once addresses are out.
	annotationQueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	configQueue     workqueue.TypedRateLimitingInterface[string]
	poolQueue       workqueue.TypedRateLimitingInterface[string]
	// leaseQueue: one key per node, when its speaker Lease changed or
	// would expire (syncLease).
	leaseQueue workqueue.TypedRateLimitingInterface[string]
	// servicesIdle is broadcast when the service queue runs empty.
	servicesIdle *signal
	fence        *leader.Fence // nil without leader election
	// announced remembers what the Announced conditions were computed
	// from and said (its own lock).
	announced *announced.Tracker
	// firstStatus logs the first status write of this run (how soon after
	// the caches synced the controller serves).
	firstStatus sync.Once
	syncedAt    time.Time // set before any worker starts

	mu       sync.Mutex // guards the fields below
	alloc    *allocator.Allocator
	cfg      *config.Config
	problems []config.Problem
	// poolGens is each pool's generation in the input cfg was built from:
	// a pool's status reports it as observed only once the allocator uses it.
	poolGens   map[string]int64
	pending    map[cache.ObjectName]bool // Services waiting for an address
	tombstones map[cache.ObjectName]*corev1.Service
	moved      map[cache.ObjectName][]netip.Addr // given up in a move, quarantined until the new status is written

	// poolInForce is the record of each pool in force in its version of
	// that input (nil when an older version is kept or none is in force).
	poolInForce map[string]*v1beta1.IPAddressPoolInForce
}

// New wires the controller's informers and queues; Run starts it.
func New(kube kubernetes.Interface, herald versioned.Interface, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 16
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
	c := &Controller{
		opts: opts, log: opts.Logger, kube: kube, herald: herald, rec: opts.Recorder, metrics: m, lastGood: config.NewLastGood(),
		manager: opts.Installation.Writer(FieldManager),
		alloc:   allocator.New(), cfg: &config.Config{Pools: map[string]*config.Pool{}},
		pending: map[cache.ObjectName]bool{}, tombstones: map[cache.ObjectName]*corev1.Service{}, servicesIdle: newSignal(),
		moved: map[cache.ObjectName][]netip.Addr{}, announced: announced.NewTracker(),
		serviceQueue: workqueue.NewTypedRateLimitingQueueWithConfig(serviceRateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "services"}),
		annotationQueue: workqueue.NewTypedRateLimitingQueueWithConfig(serviceRateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "annotations"}),
		configQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "config"}),
		poolQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pools"}),
		leaseQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "speaker-leases"}),
	}
	if c.rec == nil {
		c.rec = &record.FakeRecorder{}
	}
	if err := c.setupInformers(); err != nil {
		return nil, err
	}
	return c, nil
}

// serviceRateLimiter retries a failing Service with exponential backoff
// from 1 s up to 5 minutes. Things that could help (a pool added or grown,
// an address released) requeue pending Services at once anyway.
func serviceRateLimiter() workqueue.TypedRateLimiter[cache.ObjectName] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](time.Second, 5*time.Minute)
}

// Run starts the informers, restores existing assignments, then serves
// until ctx ends. Use it without leader election; RunFenced otherwise.
func (c *Controller) Run(ctx context.Context) error { return c.RunFenced(ctx, nil) }

// RunFenced is Run for the leader: every write first passes the fence (see
// leader.Run), so that a leader paused past its lease writes nothing.
// It returns only once every worker has stopped.
func (c *Controller) RunFenced(ctx context.Context, fence *leader.Fence) error {
	c.fence = fence
	defer c.serviceQueue.ShutDown()
	defer c.annotationQueue.ShutDown()
	defer c.configQueue.ShutDown()
	defer c.poolQueue.ShutDown()
	defer c.leaseQueue.ShutDown()
	syncStart := time.Now()
	c.kubeInformers.Start(ctx.Done())
	c.lightInformers.Start(ctx.Done())
	c.secretInformers.Start(ctx.Done())
	c.heraldInformers.Start(ctx.Done())
	c.leaseInformers.Start(ctx.Done())
	defer c.leaseInformers.Shutdown()
	defer c.kubeInformers.Shutdown()
	defer c.lightInformers.Shutdown()
	defer c.secretInformers.Shutdown()
	defer c.heraldInformers.Shutdown()
	if !k8s.WaitForCacheSync(ctx, c.synced...) {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return fmt.Errorf("caches did not sync")
	}
	c.log.Info("caches synced", "duration", time.Since(syncStart).Round(time.Millisecond))
	c.syncedAt = time.Now()
	if c.opts.MemberlistSecret != "" {
		keeper := &MemberlistKeeper{Kube: c.kube, Namespace: c.opts.Namespace, Name: c.opts.MemberlistSecret,
			Log: c.log, Recorder: c.rec, Registerer: c.opts.Registerer}
		go keeper.Run(ctx)
	}
	start := time.Now()
	if err := c.rebuildConfig(ctx); err != nil {
		c.configQueue.AddRateLimited(configKey)
		c.log.Warn("first configuration build", "error", err)
	}
	restored, conflicts := c.restore()
	c.log.Info("restored existing assignments", "services", restored, "conflicts", conflicts,
		"duration", time.Since(start).Round(time.Millisecond))
	c.enqueueAllServices()

	var wg sync.WaitGroup
	run := func(n int, f func(context.Context)) {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); wait.UntilWithContext(ctx, f, time.Second) }()
		}
	}
	run(c.opts.Workers, c.serviceWorker)
	run(4, c.annotationWorker)
	run(1, c.configWorker)
	run(2, c.poolWorker)
	run(1, c.leaseWorker)
	<-ctx.Done()
	c.serviceQueue.ShutDown()
	c.annotationQueue.ShutDown()
	c.configQueue.ShutDown()
	c.poolQueue.ShutDown()
	c.leaseQueue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) serviceWorker(ctx context.Context) {
	for processNext(ctx, c, "services", c.serviceQueue, c.syncService) {
	}
}

func (c *Controller) annotationWorker(ctx context.Context) {
	for processNext(ctx, c, "annotations", c.annotationQueue, c.syncAnnotation) {
	}
}

// configWorker rebuilds the configuration; an error (listing, or a status
// write) comes back through the queue's backoff.
func (c *Controller) configWorker(ctx context.Context) {
	for processNext(ctx, c, "config", c.configQueue, func(ctx context.Context, _ string) error {
		return c.rebuildConfig(ctx)
	}) {
	}
}

func (c *Controller) leaseWorker(ctx context.Context) {
	for processNext(ctx, c, "leases", c.leaseQueue, c.syncLease) {
	}
}

func (c *Controller) poolWorker(ctx context.Context) {
	for processNext(ctx, c, "pools", c.poolQueue, c.syncPool) {
	}
}
