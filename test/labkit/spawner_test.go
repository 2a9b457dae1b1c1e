package labkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpawnSurvivesTheCallersThread: a process spawned from a goroutine
// that ends locked to its thread (the thread ends with it, as in a test
// that enters a network namespace) keeps running: its parent-death
// signal follows the fork thread, not the caller's.
func TestSpawnSurvivesTheCallersThread(t *testing.T) {
	lines := make(chan string, 1)
	p, tid := spawnFromEndingThread(t, ProcessOptions{
		Name: "echoer", Argv: []string{"sh", "-c", "read x; echo alive"}, Stdin: true,
		Stdout: func(r io.Reader) {
			s := bufio.NewScanner(r)
			for s.Scan() {
				lines <- s.Text()
			}
		},
	})
	defer func() { _ = p.Kill() }()
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	Eventually(t, 10*time.Second, "the caller's thread "+task+" gone", func() bool {
		_, err := os.Stat(task)
		return os.IsNotExist(err)
	})
	// The parent-death signal goes out as the thread exits: a process
	// that answers after that was not sent it.
	if _, err := io.WriteString(p.Stdin(), "go\n"); err != nil {
		t.Fatalf("writing to the spawned process after its caller's thread ended: %v", err)
	}
	select {
	case got := <-lines:
		if got != "alive" {
			t.Fatalf("the spawned process said %q", got)
		}
	case <-p.Done():
		t.Fatalf("the spawned process ended when its caller's thread did: %v", p.Err())
	case <-time.After(30 * time.Second):
		t.Fatal("no answer from the spawned process in 30 s")
	}
}

// spawnFromEndingThread spawns o from a goroutine locked to a thread
// that ends with it (never the main thread, which Go keeps) and returns
// the process and that thread's id.
func spawnFromEndingThread(t *testing.T, o ProcessOptions) (*Process, int) {
	type spawned struct {
		p   *Process
		tid int
		err error
	}
	// This goroutine holds its own thread meanwhile, so that the other
	// runs on another one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 100 {
		res := make(chan spawned, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if tid := unix.Gettid(); tid == os.Getpid() {
				runtime.UnlockOSThread()
				res <- spawned{tid: tid}
				return
			}
			p, err := Spawn(o)
			res <- spawned{p, unix.Gettid(), err}
		}()
		s := <-res
		if s.err != nil {
			t.Fatal(s.err)
		}
		if s.p != nil {
			return s.p, s.tid
		}
	}
	t.Fatal("every goroutine ran on the main thread")
	return nil, 0
}
