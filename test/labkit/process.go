package labkit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProcOptions say how Network.Start runs a process.
type ProcOptions struct {
	// Name is how messages call the process.
	Name string
	// Argv is the program and its arguments (TestBinary for a helper).
	Argv []string
	// Env is added to this process's environment.
	Env []string
	// Stdin gives the process a pipe for its standard input (Proc.Stdin);
	// the polite stop is then closing it, otherwise SIGTERM.
	Stdin bool
	// Stdout, if set, reads the standard output until it ends; otherwise
	// that output goes to the log with the standard error.
	Stdout func(io.Reader)
	// Grace is how long Stop waits after the polite stop before SIGKILL
	// (0: SIGKILL at once).
	Grace time.Duration
	// MustStop fails the test when the process is still running Grace
	// after the polite stop.
	MustStop bool
}

// Proc is a process a Network started in one of its namespaces. It is
// stopped by its PID, never by name: by Stop, Kill, or when the network
// closes. Its log (standard error, and standard output unless read) is
// printed when the test has failed, and a Go race report in it fails the
// test.
type Proc struct {
	Name  string
	t     testing.TB
	o     ProcOptions
	cmd   *exec.Cmd
	stdin io.WriteCloser
	logs  syncBuffer
	done  chan struct{}
	err   error
	once  sync.Once
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

// Start starts a process in ns as o says; a failure to start fails the
// test. The process is stopped (Stop) when the network closes, before the
// namespaces go.
func (n *Network) Start(ns string, o ProcOptions) *Proc {
	n.t.Helper()
	p := start(n.t, ns, o)
	n.onClose(p.Stop)
	return p
}

// StartProc starts a process in ns (a namespace of a Network) as o says;
// a failure to start fails the test. The process is stopped when the test
// ends: a cleanup registered after the Network's runs before it.
func StartProc(t testing.TB, ns string, o ProcOptions) *Proc {
	t.Helper()
	p := start(t, ns, o)
	t.Cleanup(p.Stop)
	return p
}

func start(t testing.TB, ns string, o ProcOptions) *Proc {
	t.Helper()
	p := &Proc{Name: o.Name, t: t, o: o, done: make(chan struct{})}
	if p.Name == "" {
		p.Name = o.Argv[0]
	}
	p.Name += "@" + ns
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns}, o.Argv...)...)
	p.cmd.Env = append(os.Environ(), o.Env...)
	p.cmd.Stderr = &p.logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a crashed test leaves nothing running
	var err error
	if o.Stdin {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	var stdout io.Reader
	if o.Stdout != nil {
		if stdout, err = p.cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	} else {
		p.cmd.Stdout = &p.logs
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.Name, err)
	}
	go func() {
		if stdout != nil {
			o.Stdout(stdout)
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// PID of the process.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stdin is the process's standard input (nil without ProcOptions.Stdin).
func (p *Proc) Stdin() io.Writer { return p.stdin }

// Logs is what the process wrote to its log so far.
func (p *Proc) Logs() string { return p.logs.String() }

// Tail is the last lines of the log.
func (p *Proc) Tail(lines int) string { return tail(p.logs.String(), lines) }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end and returns its exit error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Err is the process's exit error once it has ended (nil while it runs).
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !p.Exited() {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID(), err)
	}
	<-p.done
	return nil
}

// Stop stops the process politely (closing its stdin, or SIGTERM), waits
// up to ProcOptions.Grace, then kills it; then it reports the log if the
// test failed. Later calls do nothing.
func (p *Proc) Stop() {
	p.once.Do(p.stop)
}

func (p *Proc) stop() {
	t := p.t
	if p.stdin != nil {
		_ = p.stdin.Close()
	} else if p.o.Grace > 0 && !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(p.o.Grace):
		if p.o.MustStop {
			t.Errorf("%s (pid %d) did not exit within %s of being stopped, killing it", p.Name, p.PID(), p.o.Grace)
		}
		_ = p.Kill()
	}
	if strings.Contains(p.Logs(), "DATA RACE") {
		t.Errorf("%s: the race detector reported a data race", p.Name)
	}
	if t.Failed() {
		t.Logf("--- log of %s ---\n%s", p.Name, p.Logs())
	}
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
