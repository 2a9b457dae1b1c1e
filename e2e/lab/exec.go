package lab

import (
	"context"
	"fmt"
	"slices"

	"github.com/herald-lb/herald/test/labkit"
)

// Exec runs argv inside host's namespace ("" or "root": the root
// namespace) and returns its standard output; the error carries the
// command line and its standard error.
func (nw *Network) Exec(ctx context.Context, host string, argv ...string) (string, error) {
	ns, err := nw.resolve(host)
	if err != nil {
		return "", err
	}
	if len(argv) == 0 {
		return "", fmt.Errorf("exec in %s: empty command", host)
	}
	return run(ctx, labkit.InNS(ns, argv...)...)
}

// Start starts argv inside host's namespace as a process named name (its
// log is <run dir>/logs/<name>.log; env is added to the lab's
// environment). Stop it with Stop (SIGTERM) or Kill (SIGKILL); Close
// stops whatever is still running. Tests start Herald's controller in the
// root namespace and its speakers in node namespaces this way.
func (l *Lab) Start(host, name string, argv, env []string) (*labkit.Process, error) {
	ns, err := l.resolve(host)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %s in %s: empty command", name, host)
	}
	return l.spawn(labkit.ProcessOptions{Name: name, NS: ns, Argv: argv, Env: env})
}

// spawn starts a process, records it in the state file and forgets it
// when it exits.
func (l *Lab) spawn(o labkit.ProcessOptions) (*labkit.Process, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("starting %s: lab %s is closed", o.Name, l.id)
	}
	if o.LogPath == "" {
		o.LogPath = l.logPath(o.Name)
	}
	o.Detached, o.Grace, o.OnExit = l.opts.Detached, stopGrace, l.forget
	p, err := labkit.Spawn(o)
	if err != nil {
		return nil, err
	}
	l.joinProcsCgroup(p.PID())
	r := recordOf(o.Name+"@"+l.id, o.NS, p.PID(), o.LogPath) // the run id in every recorded name
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.history = append(l.history, r)
	l.mu.Unlock()
	if err := l.state.addProcess(r); err != nil {
		l.log.Warn("recording a process in the lab state", "name", o.Name, "error", err)
	}
	l.log.Debug("started", "name", o.Name, "ns", o.NS, "pid", p.PID())
	return p, nil
}

func (l *Lab) forget(p *labkit.Process) {
	l.mu.Lock()
	l.procs = slices.DeleteFunc(l.procs, func(q *labkit.Process) bool { return q == p })
	l.mu.Unlock()
	if err := l.state.removeProcess(p.PID()); err != nil {
		l.log.Debug("forgetting a process in the lab state", "name", p.Name, "error", err)
	}
}

// remember records a process the lab did not start through spawn.
func (l *Lab) remember(r procRecord) {
	l.joinProcsCgroup(r.PID)
	l.mu.Lock()
	l.history = append(l.history, r)
	l.mu.Unlock()
}
