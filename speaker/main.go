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
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/internal/l2owner"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/internal/service"
	"github.com/herald-lb/herald/internal/speaker"
	"github.com/herald-lb/herald/internal/vrf"
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
	inst := installation.Name(f.installation) // checked by parseFlags
	rec, stopEvents := k8s.NewRecorder(sigCtx, api.Events, api.Scheme, inst.Writer("herald-speaker"))
	defer stopEvents()
	// kube-proxy's IPVS mode without strict ARP: every node would answer.
	ipvs, err := speaker.NewIPVSWatch(speaker.IPVSWatch{NodeName: f.nodeName, ProcSys: os.DirFS("/proc/sys"), Recorder: rec, Logger: log.With("component", "ipvs")}, reg)
	if err != nil {
		return err
	}
	go ipvs.Run(sigCtx)

	// The backends report to the speaker, which needs them to exist,
	// through events its loop consumes once it runs; publishing never
	// blocks a backend.
	events := speaker.NewEvents()
	l2, err := layer2.New(layer2.Config{Logger: log.With("component", "layer2"), Registerer: reg, ExcludeInterfaces: f.excluded(),
		Refresh: f.l2Refresh, PauseAfter: f.pauseAfter(),
		OnConflict: events.Conflict, OnForeignClaim: events.ForeignClaim, OnYield: events.Yielded})
	if err != nil {
		return err
	}
	bgpSpeaker, err := bgp.New(bgp.Config{Logger: log.With("component", "bgp"), Registerer: reg,
		ListenPort: uint16(f.bgpListenPort), ListenAddresses: f.bgpListen,
		OnSessionChange: events.SessionChanged, GracefulShutdownWait: f.gracefulShutdownWait})
	if err != nil {
		return err
	}
	// BGPPeers bound to a VRF use the node's addresses in it; the
	// snapshot is read now, then followed (a VRF created later is used).
	vrfs := &vrf.Watcher{Logger: log.With("component", "vrf")}
	vrfs.Refresh()
	// The member list starts once the speaker's caches have synced: a
	// speaker that cannot sync is never a member others hand addresses to.
	var ml *members.Members
	opts := speaker.Options{
		NodeName: f.nodeName, Namespace: f.namespace, Class: service.Class{OwnClassOnly: f.lbClassOnly, Name: f.lbClass},
		Installation: inst,
		Eligibility:  announce.Eligibility{IgnoreExcludeLabel: f.ignoreExcludeLB},
		L2:           l2, BGP: bgpSpeaker, Events: events, ReleaseGrace: f.releaseGrace, LeaseRenew: f.leaseRenew,
		PodName: f.podName, StatusInterval: f.statusInterval, VRFs: vrfs.Current, GracefulShutdownWait: f.gracefulShutdownWait,
		Logger: log, Registerer: reg, Recorder: rec,
	}
	if f.memberlist {
		opts.StartMembers = func(ctx context.Context, secrets corelisters.SecretNamespaceLister) (speaker.Liveness, error) {
			var err error
			ml, err = startMembers(ctx, api.Nodes, secrets, f, log, reg, health, rec, events.MembersChanged)
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

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	// No error of a part that stopped is only logged: it stops the
	// speaker (after handing its addresses over, as at SIGTERM) and the
	// process exits non-zero with it, for the kubelet to restart.
	stopped := make(chan componentError, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l2.Run(runCtx); err != nil {
			stopped <- componentError{"layer2", err}
		}
	})
	wg.Go(func() {
		if err := s.Run(runCtx); err != nil {
			stopped <- componentError{"speaker", err}
		}
	})
	// /readyz follows the speaker's own readiness (synced, member list
	// settled, BGP sessions attempted); a failed L2 announcer stops it.
	wg.Go(func() { followHealth(runCtx, health, s, l2, stopped) })
	wg.Go(func() { watchBGP(runCtx, bgpSpeaker, stopped) })
	wg.Go(func() { vrfs.Run(runCtx, s.Trigger) })
	log.Info("started", "memberlist", f.memberlist)
	var failed error
	select {
	case <-sigCtx.Done():
	case c := <-stopped:
		// /healthz names it at once; the liveness probe restarts the
		// container should the hand-over below hang.
		health.Fail(c.component, c.err.Error())
		failed = c
		if daemon.IsPermanent(c.err) {
			log.Error("cannot start, and waiting would not help: exiting", "component", c.component, "error", c.err)
		} else {
			log.Error("a part of the speaker stopped working: handing the addresses over and exiting", "component", c.component, "error", c.err)
		}
	}
	health.SetReady(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	s.Shutdown(shutdownCtx)
	cancelRun()
	wg.Wait()
	return failed
}

// componentError is a part of the speaker that stopped working.
type componentError struct {
	component string
	err       error
}

func (c componentError) Error() string {
	switch c.component {
	case "layer2":
		return "L2 announcer failed: " + c.err.Error()
	case "bgp":
		return "BGP speaker failed: " + c.err.Error()
	}
	return c.err.Error()
}

func (c componentError) Unwrap() error { return c.err }

// startMembers starts the member list on the node's address (see
// memberStart.start).
func startMembers(ctx context.Context, nodes lean.NodeClient, secrets corelisters.SecretNamespaceLister, f flags, log *slog.Logger, reg prometheus.Registerer,
	health *daemon.Health, rec record.EventRecorder, onChange func()) (*members.Members, error) {
	// Right after an install the key may not be there yet (the controller
	// creates the Secret); the file and the cache are local reads.
	return memberStart{
		Key:   members.KeySource{File: f.memberlistKeyFile, Secret: f.memberlistSecret, Namespace: f.namespace, Secrets: secrets},
		Nodes: nodes, NodeName: f.nodeName, BindAddr: f.memberlistBindAddr, Port: f.memberlistPort,
		Log: log, Health: health, Recorder: rec, Pod: podRef(f),
		Config: func(bind string, keys members.Keys) members.Config {
			return members.Config{
				NodeName: f.nodeName, BindAddr: bind, BindPort: f.memberlistPort, AdvertiseAddr: bind,
				SecretKey: keys.Primary, OtherKeys: keys.Others, Logger: log, Registerer: reg, Timing: f.timing(), OnChange: onChange,
				// the speaker calls Applied after each reconcile; how long a
				// member that never welcomes may hold this one back is the
				// L2 hand-over's (l2owner.WelcomeTimeout says why)
				WelcomeAfterApplied: true, WelcomeTimeout: l2owner.WelcomeTimeoutFor(f.releaseGrace),
				// the other speakers' L2 fence yields only to these
				NodeData: ownLinkAddrs(f, log),
			}
		},
	}.start(ctx)
}

// ownLinkAddrs is what this speaker publishes to the others: its node's
// link-layer addresses (speaker.LinkAddrs), read once at start.
func ownLinkAddrs(f flags, log *slog.Logger) []byte {
	ifaces, err := net.Interfaces()
	if err != nil {
		log.Warn("cannot list this node's interfaces: publishing no link-layer address, so the other speakers' L2 fence yields to any host", "error", err)
		return nil
	}
	addrs := speaker.LinkAddrs(ifaces, f.excluded())
	log.Info("publishing this node's link-layer addresses to the other speakers", "macs", len(addrs))
	return speaker.EncodeLinkAddrs(addrs)
}

// podRef is this speaker's Pod, which its start events are about (kubectl
// describe pod finds them by its UID).
func podRef(f flags) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: f.namespace, Name: f.podName, UID: types.UID(f.podUID)}
}

// BGP server checks: every bgpCheckEvery, a management call that must
// answer within bgpCheckEvery; bgpCheckFailures failures in a row (about
// a minute) mean the embedded server stopped working.
const (
	bgpCheckEvery    = 5 * time.Second
	bgpCheckFailures = 6
)

// watchBGP reports an embedded BGP server that stopped working to
// stopped, once, until ctx ends.
func watchBGP(ctx context.Context, b *bgp.Speaker, stopped chan<- componentError) {
	t := time.NewTicker(bgpCheckEvery)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := b.Failure(bgpCheckEvery)
		if err == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		if failures++; failures == bgpCheckFailures {
			stopped <- componentError{"bgp", fmt.Errorf("%w (%d checks in a row)", err, failures)}
			return
		}
	}
}

// followHealth copies the speaker's readiness to /readyz until ctx ends,
// and reports an L2 announcer that stopped working to stopped, once.
func followHealth(ctx context.Context, h *daemon.Health, s *speaker.Speaker, l2 *layer2.Announcer, stopped chan<- componentError) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	reported := false
	for {
		// /readyz names why the speaker is not ready
		if why := s.NotReadyReason(); why != "" {
			h.Wait("speaker", why)
		} else {
			h.Done("speaker")
		}
		h.SetReady(s.Ready())
		if err := l2.Failure(); err != nil && !reported {
			reported = true
			stopped <- componentError{"layer2", err}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
