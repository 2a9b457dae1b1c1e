// Command herald-lab brings Herald's network lab up for humans and takes
// it down again (`make lab-up`, `make lab-down`, `make lab-status`):
//
//	herald-lab up [-nodes 3] [-router frr|bird] [-proxy-mode nftables|iptables] [-port 6443] [-v]
//	herald-lab down
//	herald-lab status
//
// `up` leaves the lab running after it exits (its processes are detached
// and recorded in /run/herald-lab/<run>/state.json) and prints where
// everything is. `down` removes every lab on the machine, including
// leftovers of crashed runs; it is idempotent. See e2e/lab.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/testenv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: herald-lab up|down|status [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "down":
		err = down(ctx, os.Args[2:])
	case "status":
		err = status(os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q: want up, down or status", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herald-lab:", err)
		os.Exit(1)
	}
}

func logger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of nodes (1-4)")
	router := fs.String("router", "frr", "router implementation: frr or bird")
	mode := fs.String("proxy-mode", "nftables", "kube-proxy mode: nftables or iptables")
	port := fs.Int("port", lab.APIServerPort, "kube-apiserver port on "+lab.RootIPv4)
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, rs := range lab.Status("") {
		if rs.LeftToUser && !rs.Elsewhere {
			fmt.Printf("A lab is already up (run %s); `make lab-down` first to start a new one.\n\n", rs.ID)
			return printDescription(os.Stdout, rs.ID)
		}
	}
	start := time.Now()
	l, err := lab.Start(ctx, lab.Options{
		Nodes: *nodes, Router: lab.RouterKind(*router), ProxyMode: lab.ProxyMode(*mode),
		APIServerPort: *port, Detached: true, Logger: logger(*verbose),
	})
	if err != nil {
		return err
	}
	if err := saveDescription(l); err != nil {
		_ = l.Close()
		return err
	}
	fmt.Println()
	if err := l.Describe(os.Stdout); err != nil {
		return err
	}
	printFigures(os.Stdout, l, time.Since(start))
	return l.Release()
}

func saveDescription(l *lab.Lab) error {
	f, err := os.Create(filepath.Join(l.Dir(), lab.DescriptionFile))
	if err != nil {
		return err
	}
	defer f.Close()
	return l.Describe(f)
}

func printDescription(w io.Writer, id string) error {
	data, err := os.ReadFile(filepath.Join(lab.DefaultStateRoot, id, lab.DescriptionFile))
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func printFigures(w io.Writer, l *lab.Lab, took time.Duration) {
	fmt.Fprintf(w, "\nUp in %s:", took.Round(100*time.Millisecond))
	for _, t := range l.Timings() {
		fmt.Fprintf(w, " %s %s;", t.Phase, t.Took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(w, " memory (RSS of the lab's processes) %d MiB\n", l.Memory().TotalRSS()>>20)
}

func down(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	removed, err := lab.Down(ctx, "", logger(*verbose))
	for _, r := range removed {
		fmt.Println("removed", r)
	}
	if err == nil && len(removed) == 0 {
		fmt.Println("no lab on this machine; nothing to remove")
	}
	return err
}

func status(w io.Writer) error {
	runs := lab.Status("")
	if len(runs) == 0 {
		fmt.Fprintln(w, "no lab on this machine (`make lab-up` starts one)")
		return nil
	}
	var problems error
	for _, rs := range runs {
		kind := "test run"
		if rs.Detached {
			kind = "lab-up"
		}
		if rs.Elsewhere {
			kind += " in another network namespace"
		}
		fmt.Fprintf(w, "run %s (%s, %s router, created %s, ready %v, owner pid %d alive %v)\n",
			rs.ID, kind, rs.Router, rs.Created.Format(time.RFC3339), rs.Ready, rs.OwnerPID, rs.OwnerAlive)
		fmt.Fprintf(w, "  API server %s, KUBECONFIG=%s\n  %d namespaces", rs.APIServer, rs.AdminKubeconfig, len(rs.Namespaces))
		if len(rs.MissingNamespaces) > 0 {
			fmt.Fprintf(w, ", missing: %v", rs.MissingNamespaces)
			problems = errors.New("some lab namespaces are missing: run `make lab-down` and `make lab-up`")
		}
		fmt.Fprintln(w)
		for _, p := range rs.Processes {
			state := "running"
			if !p.Alive {
				state = "GONE"
				problems = errors.New("some lab processes are gone: see their logs, or `make lab-down` and `make lab-up`")
			}
			fmt.Fprintf(w, "  %-28s pid %-7d %-8s %5d MiB  %s\n", p.Name, p.PID, state, p.RSS>>20, p.Log)
		}
		for cg, v := range rs.ContainerMemory {
			fmt.Fprintf(w, "  %-28s containers (cgroup memory) %5d MiB\n", cg, v>>20)
		}
		fmt.Fprintf(w, "  total %d MiB\n", rs.TotalRSS()>>20)
		if rs.AdminKubeconfig != "" && rs.Ready {
			kubectlStatus(w, rs.AdminKubeconfig)
		}
	}
	return problems
}

// kubectlStatus prints the cluster's nodes, every pod and Herald's
// workloads, as kubectl shows them.
func kubectlStatus(w io.Writer, kubeconfig string) {
	kubectl, err := testenv.Binary("kubectl")
	if err != nil {
		fmt.Fprintln(w, "  (no kubectl:", err, ")")
		return
	}
	for _, args := range [][]string{
		{"get", "nodes", "-o", "wide"},
		{"get", "pods", "-A", "-o", "wide"},
		{"-n", "herald-system", "get", "daemonset,deployment,lease"},
	} {
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig, "--request-timeout=5s"}, args...)...).CombinedOutput()
		fmt.Fprintf(w, "\n$ kubectl %s\n%s", strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintln(w, "  ", err)
		}
	}
}
