package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a child process the test environment started; it is stopped
// by its PID, never by name.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// ProcessOptions say how Spawn runs a process.
type ProcessOptions struct {
	Name, LogPath string
	// Argv is the program and its arguments.
	Argv []string
	// Env is added to this process's environment.
	Env []string
	// Stdout receives the standard output (nil: the log file).
	Stdout *os.File
	// Detached: the child outlives the caller, in a session of its own,
	// and gets no signal when the caller dies. Otherwise it gets SIGKILL
	// if the caller dies, so a crashed test leaves nothing running.
	Detached bool
	// OnExit runs once the process has exited, before Done is closed.
	OnExit func(*Process)
}

// Spawn starts a process as o says, its output going to o.LogPath.
func Spawn(o ProcessOptions) (*Process, error) {
	logFile, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", o.Name, err)
	}
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	if len(o.Env) > 0 {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.Detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", o.Name, strings.Join(o.Argv, " "), err)
	}
	p := &Process{Name: o.Name, LogPath: o.LogPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		if o.OnExit != nil {
			o.OnExit(p)
		}
		close(p.done)
	}()
	return p, nil
}

// StartProcess starts path with args, its output going to logPath; the
// child gets SIGKILL if the test process dies.
func StartProcess(name, logPath string, path string, args ...string) (*Process, error) {
	return startProcess(name, logPath, false, path, args...)
}

// StartDetachedProcess starts path like StartProcess, but the child
// outlives the caller (ProcessOptions.Detached). Whoever started it
// records its PID and stops it by that PID (e2e/lab does so for the lab
// that `make lab-up` leaves running).
func StartDetachedProcess(name, logPath string, path string, args ...string) (*Process, error) {
	return startProcess(name, logPath, true, path, args...)
}

func startProcess(name, logPath string, detached bool, path string, args ...string) (*Process, error) {
	return Spawn(ProcessOptions{Name: name, LogPath: logPath, Argv: append([]string{path}, args...), Detached: detached})
}

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once it has exited (nil for status 0,
// and while it runs).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Signal sends sig to the process; one that has already exited is no
// error.
func (p *Process) Signal(sig os.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Stop sends SIGTERM, waits up to grace, then SIGKILL, and waits for exit.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Kill sends SIGKILL and waits for exit.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail returns the last lines of the process log, for error messages.
func (p *Process) Tail(lines int) string { return TailFile(p.LogPath, lines) }

// TailFile returns the last lines of a file ("" when it cannot be read).
func TailFile(path string, lines int) string {
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

// ErrExited is returned when a process ended while being waited for.
var errExited = errors.New("process exited")
