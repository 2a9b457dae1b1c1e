// Command speaker is Herald's speaker: one per node (a DaemonSet on the host
// network), it announces the addresses this node should announce, with
// ARP/NDP (L2 mode) and BGP. The logic lives in internal/speaker,
// internal/announce, internal/layer2, internal/bgp and internal/members.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/internal/speaker"
)

// argExit prints an argument error and returns the exit status: 0 for
// -h, 2 for anything else.
func argExit(w io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(w, "speaker: %v\n", err)
	return 2
}

func main() {
	k8s.ListThenWatch()
	f, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(argExit(os.Stderr, err))
	}
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "speaker:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	log, err := daemon.NewLogger(f.logLevel)
	if err != nil {
		return err
	}
	log = log.With("node", f.nodeName)
	k8s.RouteKlog(log)
	sigCtx, stop := daemon.SignalContext()
	defer stop()
	cfg, err := k8s.RESTConfig(k8s.ClientOptions{Kubeconfig: f.kubeconfig, QPS: 50, Burst: 100, UserAgent: "herald-speaker"})
	if err != nil {
		return err
	}
	api, err := lean.New(cfg, f.namespace)
	if err != nil {
		return err
	}
	reg := daemon.NewRegistry()
	health := &daemon.Health{}
	if err := daemon.Serve(sigCtx, log, reg, health, f.metricsAddr, f.healthAddr, f.profiling); err != nil {
		return err
	}
	rec, stopEvents := k8s.NewRecorder(sigCtx, api.Events, api.Scheme, "herald-speaker")
	defer stopEvents()
	// kube-proxy's IPVS mode without strict ARP: every node would answer.
	ipvs, err := speaker.NewIPVSWatch(speaker.IPVSWatch{NodeName: f.nodeName, ProcSys: os.DirFS("/proc/sys"), Recorder: rec, Logger: log.With("component", "ipvs")}, reg)
	if err != nil {
		return err
	}
	go ipvs.Run(sigCtx)

	// The backends call back into the speaker, which needs them to exist.
	var sp atomic.Pointer[speaker.Speaker]
	trigger := func() {
		if s := sp.Load(); s != nil {
			s.Trigger()
		}
	}
	l2, err := layer2.New(layer2.Config{Logger: log.With("component", "layer2"), Registerer: reg, ExcludeInterfaces: f.excluded(),
		Refresh: f.l2Refresh,
		OnConflict: func(vip netip.Addr, iface string, by net.HardwareAddr, won bool) {
			if s := sp.Load(); s != nil {
				s.Conflict(vip, iface, by, won)
			}
		},
		OnYield: func(vip netip.Addr, _ string, _ net.HardwareAddr) {
			if s := sp.Load(); s != nil {
				s.Yielded(vip)
			}
		}})
	if err != nil {
		return err
	}
	bgpSpeaker, err := bgp.New(bgp.Config{Logger: log.With("component", "bgp"), Registerer: reg,
		OnSessionChange: func(ev bgp.SessionEvent) {
			if s := sp.Load(); s != nil {
				s.SessionChanged(ev)
			}
		}})
	if err != nil {
		return err
	}
	// The member list starts once the speaker's caches have synced: a
	// speaker that cannot sync is never a member others hand addresses to.
	var ml *members.Members
	opts := speaker.Options{
		NodeName: f.nodeName, Namespace: f.namespace, Class: service.Class{OwnClassOnly: f.lbClassOnly, Name: f.lbClass},
		Eligibility: announce.Eligibility{IgnoreExcludeLabel: f.ignoreExcludeLB},
		L2:          l2, BGP: bgpSpeaker, ReleaseGrace: f.releaseGrace, LeaseRenew: f.leaseRenew,
		PodName: f.podName, StatusInterval: f.statusInterval,
		Logger: log, Registerer: reg, Recorder: rec,
	}
	if f.memberlist {
		opts.StartMembers = func(ctx context.Context, secrets corelisters.SecretNamespaceLister) (speaker.Liveness, error) {
			var err error
			ml, err = startMembers(ctx, api.Nodes, secrets, f, log, reg, trigger)
			return ml, err
		}
		defer func() {
			if ml != nil {
				_ = ml.Shutdown()
			}
		}()
	} else {
		log.Warn("member list disabled: node liveness comes from the speakers' Leases alone, so L2 failover waits for a dead speaker's Lease to expire")
	}
	s, err := speaker.New(api, opts)
	if err != nil {
		return err
	}
	sp.Store(s)

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l2.Run(runCtx); err != nil {
			log.Error("L2 announcer stopped", "error", err)
		}
	})
	wg.Go(func() {
		if err := s.Run(runCtx); err != nil {
			log.Error("speaker stopped", "error", err)
		}
	})
	// /readyz follows the speaker's own readiness (synced, member list
	// settled, BGP sessions attempted).
	wg.Go(func() { followReadiness(runCtx, health, s) })
	log.Info("started", "memberlist", f.memberlist)
	<-sigCtx.Done()
	health.SetReady(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	s.Shutdown(shutdownCtx)
	cancelRun()
	wg.Wait()
	return nil
}

// startMembers starts the member list on the node's address, or returns
// nil when it is disabled.
func startMembers(ctx context.Context, nodes lean.NodeClient, secrets corelisters.SecretNamespaceLister, f flags, log *slog.Logger, reg prometheus.Registerer, onChange func()) (*members.Members, error) {
	// Right after an install the key may not be there yet (the controller
	// creates the Secret); the file and the cache are local reads.
	src := keySource{File: f.memberlistKeyFile, Secret: f.memberlistSecret, Namespace: f.namespace, Secrets: secrets}
	keys, err := waitForKey(ctx, src, 250*time.Millisecond, 5*time.Minute, log)
	if err != nil {
		return nil, fmt.Errorf("member-list key (--memberlist-key-file, mounted from the Secret --memberlist-secret=%q): %w", f.memberlistSecret, err)
	}
	bind := f.memberlistBindAddr
	if bind == "" {
		if bind, err = nodeAddress(ctx, nodes, f.nodeName); err != nil {
			return nil, err
		}
	}
	return members.New(members.Config{
		NodeName: f.nodeName, BindAddr: bind, BindPort: f.memberlistPort, AdvertiseAddr: bind,
		SecretKey: keys.Primary, OtherKeys: keys.Others, Logger: log, Registerer: reg, Timing: f.timing(), OnChange: onChange,
		// the speaker calls Applied after each reconcile; an old owner keeps
		// answering for release-grace, so a member that never welcomes this
		// one must not hold it back that long
		WelcomeAfterApplied: true, WelcomeTimeout: f.releaseGrace / 2,
	})
}

// nodeAddress waits for the node's Node object and returns its first
// InternalIP (IPv4 preferred).
func nodeAddress(ctx context.Context, nodes lean.NodeClient, name string) (string, error) {
	var addr string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil && (addr == "" || ip.Is4()) {
				addr = a.Address
			}
		}
		return addr != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("node %s has no InternalIP address to bind the member list to (set --memberlist-bind-addr): %w", name, err)
	}
	return addr, nil
}

// followReadiness copies the speaker's readiness to /readyz until ctx ends.
func followReadiness(ctx context.Context, h *daemon.Health, s *speaker.Speaker) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		h.SetReady(s.Ready())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
