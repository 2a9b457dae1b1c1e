package labkit

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// FRR is an FRR router (zebra, bgpd and bfdd in the foreground) whose
// every path is in Dir: configuration, vty sockets, zebra's API socket,
// pid files and logs; nothing under /etc/frr.
type FRR struct{ Dir string }

// frrDaemons start in this order: zebra first, the others need its API.
func frrDaemons() []string { return []string{"zebra", "bgpd", "bfdd"} }

// Start writes conf (an frr.conf) into Dir, starts the daemons with spawn
// in the order they need, waits for their vty sockets and pushes conf with
// `vtysh -b`. The daemons started so far are returned even on error, for
// the caller to stop.
func (f FRR) Start(ctx context.Context, conf string, spawn Spawner) ([]*Process, error) {
	if err := f.prepare(conf); err != nil {
		return nil, err
	}
	var ds []*Process
	exited := func() error {
		for i, d := range ds {
			if d.Exited() {
				return fmt.Errorf("%s exited: %s", frrDaemons()[i], d.Tail(20))
			}
		}
		return nil
	}
	for i, name := range frrDaemons() {
		d, err := spawn(name, f.argv(name))
		if err != nil {
			return ds, err
		}
		ds = append(ds, d)
		if i > 0 {
			continue
		}
		err = Poll(ctx, 20*time.Second, "zebra's API socket", func() (bool, error) {
			return exists(filepath.Join(f.Dir, "zserv.api")), exited()
		})
		if err != nil {
			return ds, err
		}
	}
	err := Poll(ctx, 20*time.Second, "FRR's vty sockets", func() (bool, error) {
		for _, name := range frrDaemons() {
			if !exists(filepath.Join(f.Dir, name+".vty")) {
				return false, exited()
			}
		}
		return true, exited()
	})
	if err != nil {
		return ds, err
	}
	if _, err := Output(ctx, "vtysh", "--vty_socket", f.Dir, "--config_dir", f.Dir, "-b"); err != nil {
		return ds, fmt.Errorf("pushing frr.conf: %w", err)
	}
	return ds, nil
}

// CLI runs `vtysh -c command` and returns its output.
func (f FRR) CLI(ctx context.Context, command string) (string, error) {
	return Output(ctx, "vtysh", "--vty_socket", f.Dir, "-c", command)
}

// ShellHint is how a human reaches the router's CLI.
func (f FRR) ShellHint() string { return "vtysh --vty_socket " + f.Dir }

// prepare makes Dir afresh with conf and an empty vtysh.conf, owned by
// user frr (the daemons drop to it).
func (f FRR) prepare(conf string) error {
	if err := os.RemoveAll(f.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o750); err != nil {
		return err
	}
	confPath, vtyPath := filepath.Join(f.Dir, "frr.conf"), filepath.Join(f.Dir, "vtysh.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o640); err != nil {
		return err
	}
	if err := os.WriteFile(vtyPath, nil, 0o640); err != nil {
		return err
	}
	return chownFRR(f.Dir, confPath, vtyPath)
}

func (f FRR) argv(daemon string) []string {
	argv := []string{"/usr/lib/frr/" + daemon, "-F", "datacenter", "-u", "frr", "-g", "frr",
		"--vty_socket", f.Dir, "-z", filepath.Join(f.Dir, "zserv.api"), "-i", filepath.Join(f.Dir, daemon+".pid"),
		"-P", "0", "--log", "file:" + filepath.Join(f.Dir, daemon+".log"), "-f", "/dev/null"}
	if daemon == "bfdd" {
		argv = append(argv, "--bfdctl", filepath.Join(f.Dir, "bfdd.sock"))
	}
	return argv
}

// chownFRR gives paths to user frr.
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

// RequireFRR skips t unless Require passes and Debian's frr package is
// installed.
func RequireFRR(t testing.TB) {
	t.Helper()
	Require(t, "/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "vtysh")
}

// StartFRR runs FRR in ns with its state in dir and conf as its
// configuration; a failure fails the test. The daemons are stopped by PID
// and dir is removed when the network closes (frr.log, if conf logs
// there, is printed first when the test has failed).
func (n *Network) StartFRR(ns, dir, conf string) FRR {
	n.t.Helper()
	f := FRR{Dir: dir}
	n.onClose(func() {
		if n.t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "frr.log")); err == nil {
				n.t.Logf("frr.log:\n%s", tail(string(b), 60))
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			n.t.Errorf("remove %s: %v", dir, err)
		}
	})
	_, err := f.Start(context.Background(), conf, func(name string, argv []string) (*Process, error) {
		return n.Start(ns, ProcessOptions{Name: "frr-" + name, Argv: argv, Grace: 5 * time.Second}), nil
	})
	if err != nil {
		n.t.Fatalf("FRR in %s: %v", ns, err)
	}
	return f
}
