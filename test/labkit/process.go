package labkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ProcessOptions say how Spawn runs a process.
type ProcessOptions struct {
	// Name is how messages call the process (Argv[0] when empty).
	Name string
	// NS is the network namespace the process runs in ("": the root
	// namespace), entered with `ip netns exec`, which execs in place: the
	// PID is the program's own.
	NS string
	// Argv is the program and its arguments (TestBinary for a helper).
	Argv []string
	// Env is added to this process's environment.
	Env []string
	// LogPath is the file (appended to) that receives the standard error,
	// and the standard output unless Stdout reads it; "" keeps them in
	// memory (Logs).
	LogPath string
	// Stdin gives the process a pipe for its standard input (Stdin); the
	// polite stop is then closing it, otherwise SIGTERM.
	Stdin bool
	// Stdout, if set, reads the standard output until it ends; otherwise
	// that output goes to the log with the standard error.
	Stdout func(io.Reader)
	// Detached: the child outlives the caller, in a session of its own,
	// and gets no signal when the caller dies (whoever started it records
	// its PID and stops it by that PID). Otherwise it gets SIGKILL if the
	// caller dies, so a crashed test leaves nothing running.
	Detached bool
	// Grace is how long Stop waits after the polite stop before SIGKILL
	// (0: SIGKILL at once, after closing the standard input if it has
	// one).
	Grace time.Duration
	// MustStop fails the test (StartProc, Network.Start) when the process
	// was still running Grace after a polite stop.
	MustStop bool
	// OnExit runs once the process has exited, before Done is closed.
	OnExit func(*Process)
}

// Process is a child process a test or the lab started, in a network
// namespace or in the root namespace. It is stopped by its PID, never by
// name. Started for a test (StartProc, Network.Start), its in-memory log
// is printed when the test has failed, and a Go race report in its log
// fails the test.
type Process struct {
	Name    string
	NS      string // network namespace; "" for the root namespace
	LogPath string // "" when the log is kept in memory
	o       ProcessOptions
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logs    syncBuffer
	done    chan struct{}
	err     error
	// lingered: a stop had to kill the process after Grace
	lingered atomic.Bool
}

// TestBinary is the argv that re-executes the running test binary to run
// only the test named test (a helper process's body), with extra flags.
func TestBinary(test string, flags ...string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return append([]string{exe, "-test.run=^" + test + "$"}, flags...), nil
}

// Spawn starts a process as o says.
func Spawn(o ProcessOptions) (*Process, error) {
	if len(o.Argv) == 0 {
		return nil, fmt.Errorf("starting %s: empty command", o.Name)
	}
	p := &Process{Name: o.Name, NS: o.NS, LogPath: o.LogPath, o: o, done: make(chan struct{})}
	if p.Name == "" {
		p.Name = o.Argv[0]
	}
	var log io.Writer = &p.logs
	var logFile *os.File
	if o.LogPath != "" {
		f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("log of %s: %w", p.Name, err)
		}
		log, logFile = f, f
	}
	argv := InNS(o.NS, o.Argv...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), o.Env...)
	p.cmd.Stderr = log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.Detached {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	stdout, err := p.pipes(log)
	if err == nil {
		err = startOnForkThread(p.cmd)
	}
	if err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("starting %s (%s): %w", p.Name, strings.Join(argv, " "), err)
	}
	go p.wait(stdout, logFile)
	return p, nil
}

// pipes connects the standard input and output as the options say and
// returns the output to read (nil: it goes to log).
func (p *Process) pipes(log io.Writer) (io.Reader, error) {
	var err error
	if p.o.Stdin {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	if p.o.Stdout == nil {
		p.cmd.Stdout = log
		return nil, nil
	}
	return p.cmd.StdoutPipe()
}

// wait reads the output (if Stdout does), waits for the exit and closes
// Done.
func (p *Process) wait(stdout io.Reader, logFile *os.File) {
	if stdout != nil {
		p.o.Stdout(stdout)
	}
	p.err = p.cmd.Wait()
	if logFile != nil {
		logFile.Close()
	}
	if p.o.OnExit != nil {
		p.o.OnExit(p)
	}
	close(p.done)
}

// StartProc starts a process in ns as o says; a failure to start fails
// the test. The process is stopped when the test ends (a cleanup
// registered after a Network's runs before it).
func StartProc(t testing.TB, ns string, o ProcessOptions) *Process {
	t.Helper()
	p := startFor(t, ns, o)
	t.Cleanup(p.stopFor(t))
	return p
}

// Start starts a process in ns as o says; a failure to start fails the
// test. The process is stopped when the network closes, before the
// namespaces go.
func (n *Network) Start(ns string, o ProcessOptions) *Process {
	n.t.Helper()
	p := startFor(n.t, ns, o)
	n.onClose(p.stopFor(n.t))
	return p
}

func startFor(t testing.TB, ns string, o ProcessOptions) *Process {
	t.Helper()
	if o.Name == "" && len(o.Argv) > 0 {
		o.Name = o.Argv[0]
	}
	o.Name += "@" + ns
	o.NS = ns
	p, err := Spawn(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stopFor stops the process for the test t and reports what t should
// know: a process that had to be killed (MustStop), a data race in its
// log, and the log when t failed.
func (p *Process) stopFor(t testing.TB) func() {
	return func() {
		_ = p.Stop()
		if p.o.MustStop && p.lingered.Load() {
			t.Errorf("%s (pid %d) did not exit within %s of being stopped, killed", p.Name, p.PID(), p.o.Grace)
		}
		logs := p.Logs()
		if strings.Contains(logs, "DATA RACE") {
			t.Errorf("%s: the race detector reported a data race", p.Name)
		}
		if t.Failed() && p.LogPath == "" {
			t.Logf("--- log of %s ---\n%s", p.Name, logs)
		}
	}
}

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stdin is the process's standard input (nil without
// ProcessOptions.Stdin).
func (p *Process) Stdin() io.Writer { return p.stdin }

// Logs is what the process wrote to its log so far.
func (p *Process) Logs() string {
	if p.LogPath == "" {
		return p.logs.String()
	}
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Tail is the last lines of the log, for error messages.
func (p *Process) Tail(lines int) string { return tail(p.Logs(), lines) }

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

// Wait waits for the process to end and returns its exit error.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Err is the process's exit error once it has ended (nil for status 0,
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
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) && !p.Exited() {
		return fmt.Errorf("signalling %s (pid %d): %w", p.Name, p.PID(), err)
	}
	return nil
}

// Kill sends SIGKILL and returns once the process has ended.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// Stop stops the process politely (closing its standard input if it has
// one, otherwise SIGTERM when ProcessOptions.Grace is set), waits up to
// Grace, then kills it, and returns once it has ended.
func (p *Process) Stop() error { return p.StopWithin(p.o.Grace) }

// StopWithin is Stop with grace in place of ProcessOptions.Grace.
func (p *Process) StopWithin(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	if p.stdin != nil {
		_ = p.stdin.Close()
	} else if grace > 0 {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			return err
		}
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	p.lingered.Store(!p.Exited())
	return p.Kill()
}

// TailFile returns the last lines of a file ("" when it cannot be read).
func TailFile(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return tail(string(data), lines)
}

// syncBuffer is a log that can be read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
