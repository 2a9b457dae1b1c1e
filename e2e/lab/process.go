package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// Process is a process the lab started, in a lab namespace or in the root
// namespace. It is stopped by its PID, never by name.
type Process struct {
	Name    string
	NS      string // network namespace; "" for the root namespace
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

type procOptions struct {
	name, ns, logPath string
	argv, env         []string
	detached          bool
	stdout            *os.File // nil: the log file
	onExit            func(*Process)
}

// startProc starts argv inside ns (through `ip netns exec`, which execs in
// place, so the PID is the program's own). Not detached, the child gets
// SIGKILL when the caller dies; detached, it runs in its own session.
func startProc(o procOptions) (*Process, error) {
	logFile, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", o.name, err)
	}
	argv := inNS(o.ns, o.argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if o.stdout != nil {
		cmd.Stdout = o.stdout
	}
	if len(o.env) > 0 {
		cmd.Env = append(os.Environ(), o.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", o.name, strings.Join(o.argv, " "), err)
	}
	p := &Process{Name: o.name, NS: o.ns, LogPath: o.logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.err = err
		if o.onExit != nil {
			o.onExit(p)
		}
		close(p.done)
	}()
	return p, nil
}

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error once it has exited (nil for status 0).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Stop sends SIGTERM, waits up to 10 s, then sends SIGKILL, and returns
// once the process has exited.
func (p *Process) Stop() error {
	if err := p.Signal(syscall.SIGTERM); err != nil && !p.Exited() {
		return fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.PID(), err)
	}
	select {
	case <-p.done:
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
	<-p.done
	return nil
}

// Wait waits until the process exits or ctx ends.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tail returns the last lines of the process's log.
func (p *Process) Tail(lines int) string { return tailFile(p.LogPath, lines) }

func tailFile(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// logPath is the log file for a process name in the run directory.
func (l *Lab) logPath(name string) string {
	return filepath.Join(l.dir, "logs", strings.ReplaceAll(name, "/", "_")+".log")
}
