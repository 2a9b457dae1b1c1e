// Command herald-demo is `make demo`: it brings the network lab up (left
// running), installs Herald in it with the manifests' RBAC and the L2 and
// BGP samples, creates two HTTPS-style Services and prints what Herald did
// and how to look around. `make lab-down` removes everything.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/herald-lb/herald/e2e/demo"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
)

func main() {
	port := flag.Int("port", lab.APIServerPort, "kube-apiserver port on "+lab.RootIPv4)
	flag.Parse()
	holder, _ := strconv.Atoi(os.Getenv(lab.HolderEnv)) // set by TestMakeDemo
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *port, holder); err != nil {
		fmt.Fprintln(os.Stderr, "herald-demo:", err)
		os.Exit(1)
	}
}

// run brings a detached lab up, installs Herald and shows it working;
// whatever happens after the lab is up, it is handed to the user (Release)
// for `make lab-status` and `make lab-down`.
func run(ctx context.Context, port, holder int) (err error) {
	for _, rs := range lab.Status("") {
		if rs.LeftToUser && !rs.Elsewhere {
			return fmt.Errorf("a lab is already up (run %s); `make lab-down` first, then `make demo` again", rs.ID)
		}
	}
	start := time.Now()
	fmt.Println("Bringing the lab up: a 3-node Kubernetes cluster (containerd, kubelet, kube-proxy per node; API server, controller-manager, scheduler), an FRR router, a client...")
	l, err := lab.Start(ctx, lab.Options{Nodes: 3, Detached: true, HolderPID: holder, APIServerPort: port,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.Release()) }()
	fmt.Printf("Lab run %s is up (%s).\n", l.RunID(), time.Since(start).Round(100*time.Millisecond))
	fmt.Println("Installing Herald as a user does: make images, import into each node's containerd, kubectl apply -f manifests/herald.yaml...")
	var images deploy.Images
	if _, err := demo.Setup(ctx, l, &images); err != nil {
		return fmt.Errorf("%w\n(the lab is still up: `make lab-status`, `make lab-down`)", err)
	}
	r, err := demo.Run(ctx, l)
	if err != nil {
		return fmt.Errorf("%w\n(the lab is still up: `make lab-status`, `make lab-down`)", err)
	}
	var b strings.Builder
	fmt.Fprintln(&b)
	demo.Print(&b, l, r)
	fmt.Fprintf(&b, "Done in %s. The lab stays up. Look around:\n", time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "  export KUBECONFIG=%s\n", l.AdminKubeconfig())
	fmt.Fprintf(&b, "  kubectl get svc -n %s; kubectl describe svc -n %s demo-l2; kubectl get ipaddresspools\n", demo.Namespace, demo.Namespace)
	fmt.Fprintf(&b, "  ip netns exec %s arping -c 2 -I eth0 %s      # ask who has the L2 address\n", l.NS(lab.Client), r.L2.Address)
	fmt.Fprintf(&b, "  ip netns exec %s curl http://%s:443/           # through the router (BGP)\n", l.NS(lab.External), r.BGP.Address)
	fmt.Fprintf(&b, "  make lab-status                                      # every namespace, process and log\n")
	fmt.Fprintf(&b, "  make lab-down                                        # remove everything\n")
	fmt.Print(b.String())
	return nil
}
