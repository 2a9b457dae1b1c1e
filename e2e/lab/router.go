package lab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// routerRun is the router daemon set currently running.
type routerRun struct {
	kind  RouterKind
	cfg   routerconf.Config
	dir   string
	procs []*labkit.Process
}

// cli is the router's command line, FRR's or BIRD's.
func (r *routerRun) cli() labkit.Router {
	if r.kind == BIRD {
		return labkit.BIRD{Dir: r.dir}
	}
	return labkit.FRR{Dir: r.dir}
}

// routerSpawner starts the router's daemons as lab processes (recorded,
// stopped by PID) named prefix+daemon in the router namespace.
func (l *Lab) routerSpawner(r *routerRun, prefix string) labkit.Spawner {
	return func(name string, argv []string) (*labkit.Process, error) {
		p, err := l.spawn(labkit.ProcessOptions{Name: prefix + name, NS: l.ns(Router), Argv: argv})
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, p)
		return p, nil
	}
}

// startRouter starts the configured router implementation.
func (l *Lab) startRouter(ctx context.Context) error {
	start := time.Now()
	cfg, err := l.opts.RouterConfig()
	if err != nil {
		return err
	}
	if err := l.runRouter(ctx, l.opts.Router, cfg); err != nil {
		return err
	}
	if l.opts.BGP.NodeRouters {
		if err := l.startNodeRouters(ctx, l.opts.BGP); err != nil {
			return err
		}
	}
	l.addTiming(string(l.opts.Router)+" router listening", start)
	return nil
}

// ReconfigureRouter stops the router and starts kind with bgp (the same
// defaults as Options.BGP), e.g. to switch between FRR and BIRD or to add
// static neighbors with BFD in one lab. Sessions restart. The node
// routers stop too, and start again when bgp.NodeRouters is set.
func (l *Lab) ReconfigureRouter(ctx context.Context, kind RouterKind, bgp BGPOptions) error {
	o := l.opts
	o.Router, o.BGP = kind, bgp
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	cfg, err := o.RouterConfig()
	if err != nil {
		return err
	}
	if err := l.stopNodeRouters(); err != nil {
		return err
	}
	if err := l.stopRouter(); err != nil {
		return err
	}
	if err := l.runRouter(ctx, kind, cfg); err != nil {
		return err
	}
	if bgp.NodeRouters {
		if err := l.startNodeRouters(ctx, o.BGP); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.opts.Router, l.opts.BGP = kind, bgp
	l.mu.Unlock()
	return l.state.update(func(s *state) { s.Router = kind })
}

// RouterKind is the router implementation running now.
func (rs *Routers) RouterKind() RouterKind {
	rs.routerMu.Lock()
	defer rs.routerMu.Unlock()
	if rs.router == nil {
		return ""
	}
	return rs.router.kind
}

// RouterConfig is the configuration the router runs with now.
func (rs *Routers) RouterConfig() routerconf.Config {
	rs.routerMu.Lock()
	defer rs.routerMu.Unlock()
	if rs.router == nil {
		return routerconf.Config{}
	}
	return rs.router.cfg
}

func (l *Lab) runRouter(ctx context.Context, kind RouterKind, cfg routerconf.Config) error {
	var r *routerRun
	var err error
	if kind == BIRD {
		r, err = l.startBIRD(ctx, cfg)
	} else {
		r, err = l.startFRR(ctx, cfg)
	}
	if r != nil {
		l.routerMu.Lock()
		l.router = r
		l.routerMu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("%s router: %w", kind, err)
	}
	return l.waitBGPListening(ctx, r)
}

// stopRouter stops the router daemons (FRR's zebra and BIRD take their
// routes out of the kernel as they exit).
func (l *Lab) stopRouter() error {
	l.routerMu.Lock()
	r := l.router
	l.router = nil
	l.routerMu.Unlock()
	if r == nil {
		return nil
	}
	err := parallel(len(r.procs), func(i int) error { return r.procs[i].Stop() })
	if err != nil {
		return fmt.Errorf("stopping the router: %w", err)
	}
	return os.RemoveAll(r.dir)
}

// RouterCLI runs one command on the router: `vtysh -c command` for FRR,
// `birdc command...` for BIRD.
func (rs *Routers) RouterCLI(ctx context.Context, command string) (string, error) {
	rs.routerMu.Lock()
	r := rs.router
	rs.routerMu.Unlock()
	if r == nil {
		return "", fmt.Errorf("no router running")
	}
	return r.cli().CLI(ctx, command)
}

// RouterShellHint is how a human reaches the router's CLI.
func (rs *Routers) RouterShellHint() string {
	rs.routerMu.Lock()
	defer rs.routerMu.Unlock()
	if rs.router == nil {
		return ""
	}
	return rs.router.cli().ShellHint()
}

// waitBGPListening waits until the router listens on TCP 179.
func (l *Lab) waitBGPListening(ctx context.Context, r *routerRun) error {
	return labkit.Poll(ctx, 30*time.Second, "BGP listening on port 179 in the router namespace", func() (bool, error) {
		for _, p := range r.procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited (%v); last log lines:\n%s", p.Name, p.Err(), p.Tail(20))
			}
		}
		out, err := run(ctx, labkit.InNS(l.ns(Router), "ss", "-Htln", "sport = :179")...)
		return err == nil && strings.TrimSpace(out) != "", nil
	})
}
