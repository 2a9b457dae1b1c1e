package labkit

import (
	"os/exec"
	"runtime"
	"sync"
)

// Linux sends a child's parent-death signal (Spawn sets SIGKILL) when the
// *thread* that forked it ends, not the process. A Go program ends a
// thread whenever a goroutine exits while locked to it (a test that
// enters a network namespace with LockOSThread and Setns does), so a lab
// process forked from such a thread — a node's containerd, say — would
// be killed in the middle of a run. Every Spawn therefore forks from one
// thread that stays locked and never exits: the signal then means what
// it is for, that the test process is gone.
var (
	forkOnce sync.Once
	forks    chan func()
)

// startOnForkThread runs cmd.Start on the fork thread.
func startOnForkThread(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		forks = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range forks {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	forks <- func() { done <- cmd.Start() }
	return <-done
}
