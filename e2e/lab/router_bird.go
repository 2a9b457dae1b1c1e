package lab

import (
	"context"
	"path/filepath"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// startBIRD runs BIRD 2 in the foreground in the router namespace with its
// config, control socket and log in a private directory (labkit.BIRD).
func (l *Lab) startBIRD(ctx context.Context, cfg routerconf.Config) (*routerRun, error) {
	r := &routerRun{kind: BIRD, dir: filepath.Join(l.dir, "bird")}
	b := labkit.BIRD{Dir: r.dir}
	cfg.LogFile = b.LogPath()
	r.cfg = cfg
	text, err := routerconf.RenderBIRD(cfg)
	if err != nil {
		return nil, err
	}
	_, err = b.Start(ctx, text, l.routerSpawner(r, ""))
	return r, err
}
