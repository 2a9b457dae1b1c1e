package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// startBIRD runs BIRD 2 in the foreground in the router namespace with its
// config, control socket and log in a private directory.
func (l *Lab) startBIRD(ctx context.Context, cfg routerconf.Config) (*routerRun, error) {
	r := &routerRun{kind: BIRD, dir: filepath.Join(l.dir, "bird")}
	cfg.LogFile = filepath.Join(r.dir, "bird.log")
	r.cfg = cfg
	text, err := routerconf.RenderBIRD(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(r.dir, "bird.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	argv := []string{"bird", "-f", "-c", conf, "-s", r.socket(), "-P", filepath.Join(r.dir, "bird.pid")}
	p, err := l.spawn(procOptions{name: "bird", ns: l.ns(Router), argv: argv})
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	err = poll(ctx, 20*time.Second, "BIRD's control socket", func() (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("bird exited (%v): %s", p.Err(), p.Tail(20))
		}
		_, err := run(ctx, "birdc", "-s", r.socket(), "show", "status")
		return err == nil, nil
	})
	return r, err
}
