// Command podserver is the lab's stand-in for a pod: an HTTP server that
// answers every request with its own name, the client address it saw and
// the local address it was reached at, as JSON:
//
//	{"pod":"backend-node2-7d9f-x2k4q","node":"node2","client":"198.51.100.100:51234","server":"198.51.100.170:8080"}
//
// It is the lab's backend image: e2e/lab runs it in a Deployment per node
// (ports 8080 and 8443 and any extra ports the lab's options give), all
// plain HTTP; its readiness probe is GET /. With -burn N it serves nothing
// and keeps N threads busy instead: the lab's CPU load. `make images` also packs it as
// ghcr.io/herald-lb/podserver for a real cluster, where it reports the
// pod's name ($POD_NAME or the host name) and the client address.
//
// With -get URL[,URL...] it is a client instead: it fetches each URL in
// turn (retrying each until it answers 200 or -get-timeout passes), prints
// each body on stdout (one JSON line per URL) and exits: the lab's way to
// send traffic from inside a pod.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
	burn := flag.Int("burn", 0, "instead of serving, keep this many threads busy until SIGTERM (a CPU load for tests)")
	get := flag.String("get", "", "instead of serving, fetch these comma-separated URLs, print the bodies and exit")
	getTimeout := flag.Duration("get-timeout", 30*time.Second, "-get: how long to retry each URL")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *get != "" {
		if err := fetchAll(strings.Split(*get, ","), *getTimeout, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "podserver:", err)
			os.Exit(1)
		}
		return
	}
	if *burn > 0 {
		burnCPU(*burn, log)
		return
	}
	if err := run(*name, *node, strings.Split(*ports, ","), log); err != nil {
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

func run(name, node string, ports []string, log *slog.Logger) error {
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
	for _, s := range servers {
		_ = s.Close()
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

// fetchAll GETs each URL on a new connection, retrying every 200 ms until
// it answers 200 or timeout passes, and writes each body to w.
func fetchAll(urls []string, timeout time.Duration, w io.Writer) error {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	for _, u := range urls {
		deadline := time.Now().Add(timeout)
		for {
			body, err := fetch(c, u)
			if err == nil {
				if _, err := w.Write(body); err != nil {
					return err
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("GET %s for %v: %w", u, timeout, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

func fetch(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	return body, nil
}
