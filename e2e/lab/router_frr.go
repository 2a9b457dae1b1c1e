package lab

import (
	"context"
	"path/filepath"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// startFRR runs zebra, bgpd and bfdd in the router namespace with every
// path in a private directory (nothing under /etc/frr), then pushes the
// rendered frr.conf with `vtysh -b` (labkit.FRR).
func (l *Lab) startFRR(ctx context.Context, cfg routerconf.Config) (*routerRun, error) {
	text, err := routerconf.RenderFRR(cfg)
	if err != nil {
		return nil, err
	}
	r := &routerRun{kind: FRR, cfg: cfg, dir: filepath.Join(l.dir, "frr")}
	_, err = labkit.FRR{Dir: r.dir}.Start(ctx, text, l.routerSpawner(r, "frr-"))
	return r, err
}
