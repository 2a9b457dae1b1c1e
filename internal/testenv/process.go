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

// StartProcess starts path with args, its output going to logPath. The
// child gets SIGKILL if the test process dies, so a crashed test leaves
// nothing running.
func StartProcess(name, logPath string, path string, args ...string) (*Process, error) {
	return startProcess(name, logPath, false, path, args...)
}

// StartDetachedProcess starts path like StartProcess, but the child
// outlives the caller: it runs in a session of its own and gets no signal
// when the caller dies. Whoever started it records its PID and stops it by
// that PID (e2e/lab does so for the lab that `make lab-up` leaves running).
func StartDetachedProcess(name, logPath string, path string, args ...string) (*Process, error) {
	return startProcess(name, logPath, true, path, args...)
}

func startProcess(name, logPath string, detached bool, path string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
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
func (p *Process) Tail(lines int) string {
	data, err := os.ReadFile(p.LogPath)
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
