package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
)

// stream runs a long-lived labprobe (monitor or watch) and collects the
// JSON lines it prints.
type stream struct {
	proc  *Process
	mu    sync.Mutex
	lines []probe.Line
	eof   chan struct{}
}

// startStream starts labprobe in host's namespace and waits until it
// says it is listening.
func (l *Lab) startStream(host, name string, args ...string) (*stream, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	argv := append([]string{l.bin.labprobe}, args...)
	p, err := l.spawn(procOptions{name: name, ns: l.ns(host), argv: argv, stdout: w})
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	s := &stream{proc: p, eof: make(chan struct{})}
	ready := make(chan struct{})
	go s.read(r, ready)
	select {
	case <-ready:
		return s, nil
	case <-s.eof:
		return nil, fmt.Errorf("%s exited before listening (%v): %s", name, p.Err(), p.Tail(10))
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		return nil, fmt.Errorf("%s not listening after 10s: %s", name, p.Tail(10))
	}
}

func (s *stream) read(r *os.File, ready chan struct{}) {
	defer close(s.eof)
	defer r.Close()
	sc := bufio.NewScanner(r)
	readyClosed := false
	for sc.Scan() {
		var line probe.Line
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Ready && !readyClosed {
			close(ready)
			readyClosed = true
			continue
		}
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
	}
}

func (s *stream) snapshot() []probe.Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]probe.Line(nil), s.lines...)
}

// stop ends the prober (SIGTERM: it prints its last record) and waits
// for its output to end.
func (s *stream) stop() error {
	err := s.proc.Stop()
	<-s.eof
	if err != nil {
		return err
	}
	if e := s.proc.Err(); e != nil && !killedBySignal(e) {
		return fmt.Errorf("%s: %w: %s", s.proc.Name, e, s.proc.Tail(10))
	}
	return nil
}

// killedBySignal: the prober exits 0 on SIGTERM; one killed by a signal
// after the grace period has nothing to report either.
func killedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
