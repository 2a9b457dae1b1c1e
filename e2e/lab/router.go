package lab

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// routerRun is the router daemon set currently running.
type routerRun struct {
	kind  RouterKind
	cfg   routerconf.Config
	dir   string
	procs []*Process
}

func (r *routerRun) socket() string {
	if r.kind == BIRD {
		return filepath.Join(r.dir, "bird.ctl")
	}
	return r.dir
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
	l.addTiming(string(l.opts.Router)+" router listening", start)
	return nil
}

// ReconfigureRouter stops the router and starts kind with bgp (the same
// defaults as Options.BGP), e.g. to switch between FRR and BIRD or to add
// static neighbors with BFD in one lab. Sessions restart.
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
	if err := l.stopRouter(); err != nil {
		return err
	}
	if err := l.runRouter(ctx, kind, cfg); err != nil {
		return err
	}
	l.mu.Lock()
	l.opts.Router, l.opts.BGP = kind, bgp
	l.mu.Unlock()
	return l.state.update(func(s *state) { s.Router = kind })
}

// RouterKind is the router implementation running now.
func (l *Lab) RouterKind() RouterKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.router == nil {
		return ""
	}
	return l.router.kind
}

// RouterConfig is the configuration the router runs with now.
func (l *Lab) RouterConfig() routerconf.Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.router == nil {
		return routerconf.Config{}
	}
	return l.router.cfg
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
		l.mu.Lock()
		l.router = r
		l.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("%s router: %w", kind, err)
	}
	return l.waitBGPListening(ctx, r)
}

// stopRouter stops the router daemons (FRR's zebra and BIRD take their
// routes out of the kernel as they exit).
func (l *Lab) stopRouter() error {
	l.mu.Lock()
	r := l.router
	l.router = nil
	l.mu.Unlock()
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
func (l *Lab) RouterCLI(ctx context.Context, command string) (string, error) {
	l.mu.Lock()
	r := l.router
	l.mu.Unlock()
	if r == nil {
		return "", fmt.Errorf("no router running")
	}
	if r.kind == BIRD {
		return run(ctx, append([]string{"birdc", "-s", r.socket()}, strings.Fields(command)...)...)
	}
	return run(ctx, "vtysh", "--vty_socket", r.dir, "-c", command)
}

// RouterShellHint is how a human reaches the router's CLI.
func (l *Lab) RouterShellHint() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.router == nil {
		return ""
	}
	if l.router.kind == BIRD {
		return "birdc -s " + l.router.socket()
	}
	return "vtysh --vty_socket " + l.router.dir
}

// waitBGPListening waits until the router listens on TCP 179.
func (l *Lab) waitBGPListening(ctx context.Context, r *routerRun) error {
	return poll(ctx, 30*time.Second, "BGP listening on port 179 in the router namespace", func() (bool, error) {
		for _, p := range r.procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited (%v); last log lines:\n%s", p.Name, p.Err(), p.Tail(20))
			}
		}
		out, err := run(ctx, inNS(l.ns(Router), "ss", "-Htln", "sport = :179")...)
		return err == nil && strings.TrimSpace(out) != "", nil
	})
}

// poll checks cond every 100 ms until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// chownFRR gives paths to user frr: the FRR daemons drop to it.
func chownFRR(paths ...string) error {
	u, err := user.Lookup("frr")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
