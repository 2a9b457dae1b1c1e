// Command pause is the lab's pod sandbox image (registry.k8s.io/pause's
// part): PID 1 of every pod, it holds the pod's namespaces open, reaps
// the children that are reparented to it and exits on SIGINT or SIGTERM.
// The lab packs it as an image with go-containerregistry, so the cluster
// needs no registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// one line once the signals are ours: before it, SIGTERM still takes
	// the Go runtime's default (death by the signal), and a test waits for it
	_, _ = os.Stderr.WriteString("pause: waiting for SIGINT or SIGTERM\n")
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
