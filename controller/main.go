// Command controller is Herald's controller: it gives LoadBalancer
// Services their addresses from IPAddressPools. One replica is active at a
// time (Lease leader election); the logic lives in internal/controller.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/clientset"
	"github.com/herald-lb/herald/internal/kubeversion"
	"github.com/herald-lb/herald/internal/leader"
	"github.com/herald-lb/herald/internal/service"
)

type flags struct {
	kubeconfig, namespace, metricsAddr, healthAddr, logLevel, identity, leaseName, memberlistSecret, lbClass, installation string
	lbClassOnly, leaderElect, metallbAnnotations, ignoreExcludeLB, profiling                                               bool
	workers, burst, eventBurst                                                                                             int
	qps, eventQPS                                                                                                          float64
	leaseDuration, renewDeadline, retryPeriod, releaseHold                                                                 time.Duration
}

func parseFlags(args []string) (flags, error) {
	var f flags
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path of a kubeconfig file; empty: the in-cluster configuration")
	fs.StringVar(&f.namespace, "namespace", "herald-system", "Herald's namespace: its Lease and the BGP password Secrets live there")
	fs.BoolVar(&f.lbClassOnly, "lb-class-only", false, "handle only Services with spec.loadBalancerClass --lb-class (default: also Services without a class); turning it on clears Herald's status from Services without a class and releases their addresses, turning it off gives them addresses again")
	fs.StringVar(&f.lbClass, "lb-class", "herald.dev/herald", "the spec.loadBalancerClass Herald answers to; Services of other classes are left alone (the speakers' --lb-class must match; a second installation beside the default one needs its own class and --installation)")
	fs.StringVar(&f.installation, "installation", "", "this installation's name when several share the cluster (a DNS label of at most 40 characters; the speakers' must match): it reads only Herald objects labelled herald.dev/installation=<name>, and its speakers write SpeakerStatuses <node>.<name>; empty: the default installation, which reads only objects without that label")
	fs.BoolVar(&f.metallbAnnotations, "metallb-annotations", true, "read MetalLB's Service annotations (metallb.io/ and metallb.universe.tf/ loadBalancerIPs, address-pool, allow-shared-ip) where the herald.dev/ ones are absent")
	fs.BoolVar(&f.ignoreExcludeLB, "ignore-exclude-lb", false, "count nodes labelled node.kubernetes.io/exclude-from-external-load-balancers as able to announce (MetalLB's flag of the same name; must match the speakers')")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "elect one active replica through a Lease; disable only when a single replica runs")
	fs.StringVar(&f.leaseName, "lease-name", "herald-controller", "name of the leader-election Lease")
	fs.StringVar(&f.identity, "identity", envOr("POD_NAME", host), "this replica's identity in the Lease (default: $POD_NAME, else the host name)")
	fs.DurationVar(&f.leaseDuration, "lease-duration", 15*time.Second, "how long a follower waits before taking over a Lease that is not renewed")
	fs.DurationVar(&f.renewDeadline, "renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up leadership")
	fs.DurationVar(&f.retryPeriod, "retry-period", 2*time.Second, "interval between leader-election attempts")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":7472", "address of the Prometheus /metrics endpoint; empty disables it")
	fs.BoolVar(&f.profiling, "profiling", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on --metrics-addr")
	fs.StringVar(&f.healthAddr, "health-addr", ":7473", "address of the /healthz and /readyz endpoints; empty disables them")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.memberlistSecret, "memberlist-secret", "herald-memberlist", "Secret in --namespace holding the speakers' member-list key; created with a random key when missing (empty: never create it)")
	fs.IntVar(&f.workers, "workers", 16, "Services synced in parallel")
	fs.DurationVar(&f.releaseHold, "release-hold", 5*time.Second, "how long an address a Service gave up (deleted, moved, let go) is held back before another Service may get it, so that clients' ARP caches and DNS answers do not send one tenant's traffic to another (0: as soon as the old status is gone)")
	fs.Float64Var(&f.qps, "kube-api-qps", -1, "queries per second to the API server at most; negative (the default): no client-side limit, --workers bounds the requests in flight and the API server's Priority and Fairness queues them")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "burst of queries to the API server above a positive --kube-api-qps")
	fs.Float64Var(&f.eventQPS, "event-qps", 50, "Events written per second at most, on a client of their own so that they never delay status writes (a burst beyond --event-burst plus the recorder's queue of 1,000 drops Events, never a status write)")
	fs.IntVar(&f.eventBurst, "event-burst", 200, "burst of Event writes")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if _, err := installation.Parse(f.installation); err != nil {
		return f, err
	}
	if f.qps == 0 || (f.qps > 0 && f.burst < 1) {
		return f, fmt.Errorf("--kube-api-qps must be positive with --kube-api-burst at least 1, or negative for no client-side limit (got %g and %d)", f.qps, f.burst)
	}
	if f.eventQPS <= 0 || f.eventBurst < 1 {
		return f, fmt.Errorf("--event-qps must be above 0 and --event-burst at least 1 (got %g and %d)", f.eventQPS, f.eventBurst)
	}
	return f, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	k8s.ListThenWatch()
	f, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controller: %v\n", err)
		os.Exit(2)
	}
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	log, err := daemon.NewLogger(f.logLevel)
	if err != nil {
		return err
	}
	k8s.RouteKlog(log)
	ctx, stop := daemon.SignalContext()
	defer stop()
	clients, err := clientset.New(k8s.ClientOptions{Kubeconfig: f.kubeconfig, QPS: float32(f.qps), Burst: f.burst, UserAgent: "herald-controller"})
	if err != nil {
		return err
	}
	kube := clients.Kube
	reg := daemon.NewRegistry()
	isLeader := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "controller", Name: "leader",
		Help: "1 while this replica is the active (leader) controller."})
	reg.MustRegister(isLeader)
	// Health is served before the wait for the API server below: waiting
	// is not ready with the reason, never a liveness failure that would
	// restart a process waiting for something that resolves by itself.
	health := &daemon.Health{}
	if err := daemon.Serve(ctx, log, reg, health, f.metricsAddr, f.healthAddr, f.profiling); err != nil {
		return err
	}
	if err := kubeversion.WaitAndCheckServer(ctx, kube.Discovery(), func(err error) {
		log.Warn("cannot reach the API server yet; retrying", "error", err)
		health.Wait("api server", err.Error())
	}); err != nil {
		return err
	}
	health.Done("api server")
	// Events go through their own client and rate limit, so that a burst of
	// events never delays the status writes that hand out addresses.
	eventCfg := *clients.Config
	eventCfg.QPS, eventCfg.Burst = float32(f.eventQPS), f.eventBurst
	eventKube, err := kubernetes.NewForConfig(&eventCfg)
	if err != nil {
		return err
	}
	inst := installation.Name(f.installation) // checked by parseFlags
	rec, stopEvents := k8s.NewRecorder(ctx, clientset.EventSink(eventKube), clients.Scheme, inst.Writer(controller.FieldManager))
	defer stopEvents()
	c, err := controller.New(kube, clients.Herald, controller.Options{
		Class: service.Class{OwnClassOnly: f.lbClassOnly, Name: f.lbClass}, Namespace: f.namespace, Installation: inst, Workers: f.workers, ReleaseHold: f.releaseHold,
		Annotations: service.Annotations{IgnoreMetalLB: !f.metallbAnnotations},
		Eligibility: announce.Eligibility{IgnoreExcludeLabel: f.ignoreExcludeLB},
		Logger:      log, Registerer: reg, Recorder: rec,
	})
	if err != nil {
		return err
	}
	health.SetReady(true)
	log.Info("starting", "namespace", f.namespace, "installation", f.installation, "lbClass", f.lbClass, "lbClassOnly", f.lbClassOnly, "leaderElect", f.leaderElect, "identity", f.identity)
	// Every replica keeps the speakers' member-list Secret, leader or not.
	keeper := &controller.MemberlistKeeper{Kube: kube, Namespace: f.namespace, Name: f.memberlistSecret, Log: log, Recorder: rec, Registerer: reg}
	go keeper.Run(ctx)
	if !f.leaderElect {
		isLeader.Set(1)
		return c.Run(ctx)
	}
	// leader.Run returns only after the controller's workers stopped, and
	// hands back its error (no shared variable between goroutines).
	err = leader.Run(ctx, kube, leader.Options{
		Namespace: f.namespace, Name: f.leaseName, Identity: f.identity,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		OnLeading: func(b bool) { isLeader.Set(boolFloat(b)) },
	}, log, c.RunFenced)
	if err != nil {
		return err
	}
	if ctx.Err() == nil {
		return fmt.Errorf("lost leadership of Lease %s/%s; exiting so a fresh process can compete again", f.namespace, f.leaseName)
	}
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
