package labkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BIRD is a BIRD 2 router in the foreground whose configuration, control
// socket, pid file and log are in Dir.
type BIRD struct{ Dir string }

// Socket is BIRD's control socket.
func (b BIRD) Socket() string { return filepath.Join(b.Dir, "bird.ctl") }

// LogPath is where a configuration should have BIRD log.
func (b BIRD) LogPath() string { return filepath.Join(b.Dir, "bird.log") }

// Start makes Dir afresh with conf as bird.conf, starts bird with spawn
// and waits until its control socket answers. The daemon is returned even
// on error, for the caller to stop.
func (b BIRD) Start(ctx context.Context, conf string, spawn Spawner) ([]*Process, error) {
	if err := os.RemoveAll(b.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(b.Dir, "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	d, err := spawn("bird", []string{"bird", "-f", "-c", path, "-s", b.Socket(), "-P", filepath.Join(b.Dir, "bird.pid")})
	if err != nil {
		return nil, err
	}
	err = Poll(ctx, 20*time.Second, "BIRD's control socket", func() (bool, error) {
		if d.Exited() {
			return false, fmt.Errorf("bird exited (%v): %s", d.Err(), d.Tail(20))
		}
		_, err := b.CLI(ctx, "show status")
		return err == nil, nil
	})
	return []*Process{d}, err
}

// CLI runs one birdc command (words separated by spaces).
func (b BIRD) CLI(ctx context.Context, command string) (string, error) {
	return Output(ctx, append([]string{"birdc", "-s", b.Socket()}, strings.Fields(command)...)...)
}

// ShellHint is how a human reaches the router's CLI.
func (b BIRD) ShellHint() string { return "birdc -s " + b.Socket() }
