package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// shared is the lab Main started for a test package. It is the only
// package-level state here, and exists because TestMain runs once per
// test binary (the same shape as test/testenv's Main and Shared).
var shared struct {
	lab *Lab
	err error
}

// Main runs a test package against one lab, started before the first test
// and removed after the last (then checked: anything left behind fails
// the package). Use it from TestMain:
//
//	func TestMain(m *testing.M) { lab.Main(m, lab.Options{Router: lab.BIRD}) }
//
// and lab.Shared(t) in the tests. With -short no lab starts and Shared
// skips. When tests fail, the last lines of every lab log are printed.
func Main(m *testing.M, opts Options) {
	os.Exit(runMain(m, opts))
}

func runMain(m *testing.M, opts Options) int {
	flag.Parse()
	if testing.Short() {
		shared.err = errSkipShort
		return m.Run()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // includes waiting for another package's lab
	l, err := Start(ctx, opts)
	cancel()
	shared.lab, shared.err = l, err
	if err != nil {
		shared.err = fmt.Errorf("lab: %w", err)
		return m.Run()
	}
	stop := closeOnSignal(l)
	defer stop()
	code := m.Run()
	if code != 0 {
		l.dumpLogs(os.Stderr, 25)
	}
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "lab teardown:", err)
		code = 1
	} else {
		fmt.Fprintf(os.Stderr, "lab %s removed; checked: no namespace, process, link, route, mount or file of it is left\n", l.id)
	}
	return code
}

var errSkipShort = errors.New("lab tests skipped with -short")

// closeOnSignal removes the lab when the test binary is interrupted.
func closeOnSignal(l *Lab) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "lab: %v: removing lab %s\n", sig, l.id)
			_ = l.Close()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// Shared returns the lab Main started, failing the test if it could not
// start (skipping it with -short).
func Shared(t testing.TB) *Lab {
	t.Helper()
	if errors.Is(shared.err, errSkipShort) {
		t.Skip(shared.err)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if shared.lab == nil {
		t.Fatal("lab.Shared called without lab.Main in TestMain")
	}
	return shared.lab
}

// dumpLogs prints the last lines of every log of the run.
func (l *Lab) dumpLogs(w *os.File, lines int) {
	var files []string
	_ = filepath.WalkDir(l.dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") {
			files = append(files, path)
		}
		return nil
	})
	for _, f := range files {
		fmt.Fprintf(w, "==== %s (last %d lines)\n%s\n", f, lines, labkit.TailFile(f, lines))
	}
}

// Leftovers is what Close found still existing after teardown (empty
// when clean, and before Close).
func (l *Lab) Leftovers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.leftovers...)
}

// findLeftovers lists what of this run still exists: namespaces, the
// root leg, lab addresses or routes in the root namespace, mounts, the
// run directory, and live processes that the run started or that refer
// to its directory. Close calls it while it still holds the machine lock.
func (l *Lab) findLeftovers() []string {
	var left []string
	for _, ns := range labNamespaces(l.id) {
		left = append(left, "namespace "+ns)
	}
	if linkExists(rootLinkName(l.id)) {
		left = append(left, "root link "+rootLinkName(l.id))
	}
	if err := labkit.CheckRootNamespace(context.Background(), false); err != nil {
		left = append(left, "root namespace: "+err.Error())
	}
	if exists(l.dir) {
		left = append(left, "directory "+l.dir)
	}
	for _, cg := range runCgroups(l.id) {
		left = append(left, "cgroup "+cg)
	}
	if exists(procsCgroup(l.id)) {
		left = append(left, "cgroup "+procsCgroup(l.id))
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			if strings.Contains(line, nsPrefix+l.id+"-") || strings.Contains(line, l.dir) {
				left = append(left, "mount "+line)
			}
		}
	}
	if l.state != nil && len(boostHeldBy(l.opts.StateRoot, l.id)) == 0 {
		for _, t := range l.state.snapshot().SoftirqThreads {
			if stillBoosted(t) {
				left = append(left, fmt.Sprintf("%s (pid %d) still real-time", t.Name, t.PID))
			}
		}
	}
	l.mu.Lock()
	history := append([]procRecord(nil), l.history...)
	l.mu.Unlock()
	for _, r := range history {
		if r.alive() {
			left = append(left, fmt.Sprintf("process %s (pid %d)", r.Name, r.PID))
		}
	}
	for _, r := range pidsReferring(l.dir + string(filepath.Separator)) {
		left = append(left, fmt.Sprintf("process pid %d referring to %s", r.PID, l.dir))
	}
	return left
}
