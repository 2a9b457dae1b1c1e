package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// Process is a process the lab started, in a lab namespace or in the root
// namespace. It is stopped by its PID, never by name.
type Process struct {
	*testenv.Process
	NS string // network namespace; "" for the root namespace
}

type procOptions struct {
	name, ns, logPath string
	argv, env         []string
	detached          bool
	stdout            *os.File // nil: the log file
	onExit            func(*testenv.Process)
}

// startProc starts argv inside ns (through `ip netns exec`, which execs in
// place, so the PID is the program's own). Not detached, the child gets
// SIGKILL when the caller dies; detached, it runs in its own session.
func startProc(o procOptions) (*Process, error) {
	p, err := testenv.Spawn(testenv.ProcessOptions{
		Name: o.name, LogPath: o.logPath, Argv: labkit.InNS(o.ns, o.argv...), Env: o.env,
		Stdout: o.stdout, Detached: o.detached, OnExit: o.onExit,
	})
	if err != nil {
		return nil, err
	}
	return &Process{Process: p, NS: o.ns}, nil
}

// Stop sends SIGTERM, waits up to 10 s, then sends SIGKILL, and returns
// once the process has exited.
func (p *Process) Stop() error {
	if err := p.Signal(syscall.SIGTERM); err != nil && !p.Exited() {
		return fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.PID(), err)
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(stopGrace):
	}
	return p.Kill()
}

// Kill sends SIGKILL and returns once the process has exited.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil && !p.Exited() {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID(), err)
	}
	<-p.Done()
	return nil
}

// Wait waits until the process exits or ctx ends.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.Done():
		return p.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// logPath is the log file for a process name in the run directory.
func (l *Lab) logPath(name string) string {
	return filepath.Join(l.dir, "logs", strings.ReplaceAll(name, "/", "_")+".log")
}
