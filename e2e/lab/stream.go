package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// stream runs a long-lived labprobe (monitor or watch) and collects the
// JSON lines it prints.
type stream struct {
	proc  *labkit.Process
	mu    sync.Mutex
	lines []probe.Line
	eof   chan struct{}
}

// startStream starts labprobe in host's namespace and waits until it
// says it is listening.
func (l *Lab) startStream(host, name string, args ...string) (*stream, error) {
	s := &stream{eof: make(chan struct{})}
	ready := make(chan struct{})
	argv := append([]string{l.bin.labprobe}, args...)
	p, err := l.spawn(labkit.ProcessOptions{Name: name, NS: l.ns(host), Argv: argv,
		Stdout: func(r io.Reader) { s.read(r, ready) }})
	if err != nil {
		return nil, err
	}
	s.proc = p
	select {
	case <-ready:
		return s, nil
	case <-s.eof:
		return nil, fmt.Errorf("%s exited before listening (%v): %s", name, p.Wait(), p.Tail(10))
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		return nil, fmt.Errorf("%s not listening after 10s: %s", name, p.Tail(10))
	}
}

// read collects the JSON lines of the prober's output until it ends,
// closing ready at the line that says it listens.
func (s *stream) read(r io.Reader, ready chan struct{}) {
	defer close(s.eof)
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
