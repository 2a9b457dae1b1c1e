package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// setup builds the lab, overlapping what does not depend on each other:
// the helper build runs beside the network, the control plane and the
// router; the nodes (containerd, kubelet) wait for the helpers (the pause
// and backend images are made from them), kube-proxy for the nodes.
func (l *Lab) setup(ctx context.Context) error {
	built := make(chan error, 1)
	go func() { built <- l.buildBinaries(ctx) }()
	helpers := sync.OnceValue(func() error { return <-built })
	start := time.Now()
	if err := l.buildTopology(ctx); err != nil {
		return errors.Join(err, helpers())
	}
	if l.opts.VRF != "" {
		if err := l.AddVRFUplinks(ctx, l.opts.VRF); err != nil {
			return errors.Join(err, helpers())
		}
	}
	l.addTiming("network", start)
	if err := l.learnAddresses(ctx); err != nil {
		return errors.Join(err, helpers())
	}
	steps := []func() error{
		func() error {
			if err := l.startControlPlane(ctx); err != nil {
				return err
			}
			if err := l.startClusterControllers(ctx); err != nil {
				return err
			}
			if err := helpers(); err != nil {
				return err
			}
			images, err := l.buildLabImages()
			if err != nil {
				return err
			}
			if err := l.startNodes(ctx, images); err != nil {
				return err
			}
			if l.opts.NoKubeProxy {
				return nil
			}
			return l.startKubeProxies(ctx)
		},
		func() error { return l.startRouter(ctx) },
	}
	if err := parallel(len(steps), func(i int) error { return steps[i]() }); err != nil {
		return errors.Join(err, helpers())
	}
	return l.state.update(func(s *state) { s.Ready = true })
}

// learnAddresses fills in the segment MACs and the nodes' link-local
// addresses (for mapping routers' IPv6 next hops to nodes).
func (nw *Network) learnAddresses(ctx context.Context) error {
	nw.macsMu.Lock()
	nw.macs[planMAC(1).String()] = Router
	nw.macs[planMAC(100).String()] = Client
	nw.macs[planMAC(126).String()] = Root
	for _, n := range nw.nodes {
		nw.macs[n.MAC.String()] = n.Name
	}
	nw.macsMu.Unlock()
	return parallel(len(nw.nodes), func(i int) error {
		ll, err := linkLocal(ctx, nw.nodes[i].NS, "eth0")
		if err != nil {
			return err
		}
		nw.nodes[i].LinkLocal = ll
		return nil
	})
}

// Close stops every process the lab and its tests started, removes the
// namespaces, the root leg and the run directory, checks that nothing is
// left (Leftovers), and releases the machine for the next lab. It is
// idempotent; the error names whatever could not be removed.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	procs := append([]*labkit.Process(nil), l.procs...)
	l.mu.Unlock()
	defer l.lock.release()
	start := time.Now()
	var errs []string
	errs = append(errs, l.stopNodes(procs)...)
	if err := parallel(len(procs), func(i int) error { return procs[i].Stop() }); err != nil {
		errs = append(errs, err.Error())
	}
	if l.cp != nil {
		l.cp.Stop()
	}
	if l.id != "" {
		if _, err := removeRun(context.Background(), l.opts.StateRoot, l.id, l.log); err != nil {
			errs = append(errs, err.Error())
		}
		_ = os.Remove(l.opts.StateRoot) // only when no other run is left
		left := l.findLeftovers()
		l.mu.Lock()
		l.leftovers = left
		l.mu.Unlock()
		if len(left) > 0 {
			errs = append(errs, "left behind: "+strings.Join(left, ", "))
		}
	}
	l.log.Info("lab down", "run", l.id, "took", time.Since(start).Round(time.Millisecond))
	if len(errs) > 0 {
		return fmt.Errorf("lab %s teardown: %s", l.id, strings.Join(errs, "; "))
	}
	return nil
}

// Release lets the caller exit and leave a detached lab running (what
// `herald-lab up` does); `herald-lab down` removes it later.
func (l *Lab) Release() error {
	if !l.opts.Detached {
		return fmt.Errorf("lab %s is not detached: its processes die with this one; use Close", l.id)
	}
	var holder *procRecord
	if l.opts.HolderPID > 0 {
		r := recordOf("holder", "", l.opts.HolderPID, "")
		holder = &r
	}
	err := l.state.update(func(s *state) { s.HandedOver, s.Holder = true, holder })
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.lock.release()
	if err != nil {
		return fmt.Errorf("lab %s: recording the hand-over: %w", l.id, err)
	}
	return nil
}
