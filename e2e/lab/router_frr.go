package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// startFRR runs zebra, bgpd and bfdd in the router namespace with every
// path in a private directory (nothing under /etc/frr), then pushes the
// rendered frr.conf with `vtysh -b`.
func (l *Lab) startFRR(ctx context.Context, cfg routerconf.Config) (*routerRun, error) {
	text, err := routerconf.RenderFRR(cfg)
	if err != nil {
		return nil, err
	}
	r := &routerRun{kind: FRR, cfg: cfg, dir: filepath.Join(l.dir, "frr")}
	if err := writeFRRDir(r.dir, text); err != nil {
		return nil, err
	}
	zebra, err := l.startFRRDaemon(r, "zebra")
	if err != nil {
		return r, err
	}
	err = poll(ctx, 20*time.Second, "zebra's API socket", func() (bool, error) {
		if zebra.Exited() {
			return false, fmt.Errorf("zebra exited: %s", zebra.Tail(20))
		}
		return exists(filepath.Join(r.dir, "zserv.api")), nil
	})
	if err != nil {
		return r, err
	}
	for _, d := range []string{"bgpd", "bfdd"} {
		if _, err := l.startFRRDaemon(r, d); err != nil {
			return r, err
		}
	}
	err = poll(ctx, 20*time.Second, "FRR's vty sockets", func() (bool, error) {
		for _, p := range r.procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited: %s", p.Name, p.Tail(20))
			}
		}
		return exists(filepath.Join(r.dir, "zebra.vty")) && exists(filepath.Join(r.dir, "bgpd.vty")) && exists(filepath.Join(r.dir, "bfdd.vty")), nil
	})
	if err != nil {
		return r, err
	}
	if _, err := run(ctx, "vtysh", "--vty_socket", r.dir, "--config_dir", r.dir, "-b"); err != nil {
		return r, fmt.Errorf("pushing frr.conf: %w", err)
	}
	return r, nil
}

func writeFRRDir(dir, conf string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	confPath, vtyPath := filepath.Join(dir, "frr.conf"), filepath.Join(dir, "vtysh.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o640); err != nil {
		return err
	}
	if err := os.WriteFile(vtyPath, nil, 0o640); err != nil {
		return err
	}
	return chownFRR(dir, confPath, vtyPath)
}

func (l *Lab) startFRRDaemon(r *routerRun, daemon string) (*Process, error) {
	argv := []string{"/usr/lib/frr/" + daemon, "-F", "datacenter", "-u", "frr", "-g", "frr",
		"--vty_socket", r.dir, "-z", filepath.Join(r.dir, "zserv.api"), "-i", filepath.Join(r.dir, daemon+".pid"),
		"-P", "0", "--log", "file:" + filepath.Join(r.dir, daemon+".log"), "-f", "/dev/null"}
	if daemon == "bfdd" {
		argv = append(argv, "--bfdctl", filepath.Join(r.dir, "bfdd.sock"))
	}
	p, err := l.spawn(procOptions{name: "frr-" + daemon, ns: l.ns(Router), argv: argv})
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	return p, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
