// Command podserver is the lab's stand-in for a pod: an HTTP server that
// answers every request with its own name, the client address it saw and
// the local address it was reached at, as JSON:
//
//	{"pod":"backend-node2-7d9f-x2k4q","node":"node2","client":"198.51.100.100:51234","server":"198.51.100.170:8080"}
//
// It is the lab's backend image: e2e/lab runs it in a Deployment per node
// (ports 8080 and 8443 and any extra ports the lab's options give), all
// plain HTTP; its readiness probe is GET /. On SIGTERM it keeps serving
// for -linger (as a well-behaved backend does while kube-proxy removes
// its terminating endpoint, the job a preStop sleep does elsewhere), then
// finishes the requests in flight and exits. With -burn N it serves nothing
// and keeps N threads busy instead: the lab's CPU load. `make images` also packs it as
// ghcr.io/herald-lb/podserver for a real cluster, where it reports the
// pod's name ($POD_NAME or the host name) and the client address.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

type answer struct {
	Pod    string `json:"pod"`
	Node   string `json:"node,omitempty"`
	Client string `json:"client"`
	Server string `json:"server"`
}

func main() {
	name := flag.String("name", defaultName(), "pod name to report (default: $POD_NAME, else the host name, which is the pod's name in a pod)")
	node := flag.String("node", os.Getenv("NODE_NAME"), "node name to report (default: $NODE_NAME)")
	ports := flag.String("ports", "8080,8443", "comma-separated TCP ports to serve on (all addresses)")
	linger := flag.Duration("linger", time.Second, "after SIGTERM, keep serving this long before shutting down (kube-proxy's time to drop the terminating endpoint)")
	burn := flag.Int("burn", 0, "instead of serving, keep this many threads busy until SIGTERM (a CPU load for tests)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *burn > 0 {
		burnCPU(*burn, log)
		return
	}
	if err := run(*name, *node, strings.Split(*ports, ","), *linger, log); err != nil {
		log.Error("podserver failed", "error", err)
		os.Exit(1)
	}
}

func defaultName() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	n, _ := os.Hostname()
	return n
}

func run(name, node string, ports []string, linger time.Duration, log *slog.Logger) error {
	if name == "" {
		return errors.New("-name is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		a := answer{Pod: name, Node: node, Client: r.RemoteAddr}
		if local != nil {
			a.Server = local.String()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a)
	})
	errs := make(chan error, len(ports))
	var servers []*http.Server
	for _, p := range ports {
		l, err := net.Listen("tcp", ":"+strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("listening on port %s: %w", p, err)
		}
		s := &http.Server{Handler: h}
		servers = append(servers, s)
		go func() { errs <- s.Serve(l) }()
	}
	log.Info("serving", "pod", name, "ports", ports)
	select {
	case <-ctx.Done():
	case err := <-errs:
		return err
	}
	log.Info("terminating: serving on", "pod", name, "linger", linger)
	select {
	case <-time.After(linger):
	case err := <-errs:
		return err
	}
	done, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(done)
	}
	return nil
}

// burnCPU keeps n threads spinning until SIGTERM or an interrupt.
func burnCPU(n int, log *slog.Logger) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var spins atomic.Uint64
	for range n {
		go func() {
			runtime.LockOSThread()
			for x := uint64(0); ; x++ {
				if x%(1<<20) == 0 {
					spins.Add(1)
				}
			}
		}()
	}
	log.Info("burning CPU", "threads", n)
	<-ctx.Done()
	log.Info("stopped burning", "spins", spins.Load())
}
