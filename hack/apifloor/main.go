// Command apifloor measures the API server's write floor for LoadBalancer
// status: N status writes (strategic merge patches; server-side applies
// with --apply, whole-object status updates with --update) of pending LoadBalancer Services with W concurrent writers
// over one persistent client, for each W given. Herald's controller benchmarks print their figures next to this
// floor (package floor); run it on its own to size a cluster's API server:
//
//	go run ./hack/apifloor --kubeconfig ~/.kube/config --services 1000 --writers 8,16,32
//
// It works in a namespace of its own (--namespace), creates its Services
// with a loadBalancerClass no controller handles, and deletes them after
// each measurement.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-lb/herald/test/apifloor"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "apifloor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("apifloor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to measure")
	ns := fs.String("namespace", "herald-apifloor", "namespace to create the Services in (created when missing)")
	n := fs.Int("services", 1000, "status writes per measurement")
	writers := fs.String("writers", "8,16,32", "comma-separated writer counts, one measurement each")
	apply := fs.Bool("apply", false, "write with server-side apply instead of a strategic merge patch")
	update := fs.Bool("update", false, "write the whole Service back (PUT of the status subresource) instead of a strategic merge patch")
	ipv6 := fs.Bool("ipv6", false, "single-stack IPv6 Services (when the API server has few IPv4 cluster IPs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ws, err := parseInts(*writers)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	fmt.Printf("%-8s %-8s %-10s %s\n", "writes", "writers", "seconds", "writes/s")
	for _, w := range ws {
		r, err := apifloor.Measure(context.Background(), cfg, apifloor.Options{Namespace: *ns, Services: *n, Writers: w, IPv6: *ipv6, Apply: *apply, Update: *update})
		if err != nil {
			return err
		}
		fmt.Printf("%-8d %-8d %-10.3f %.0f\n", r.Services, r.Writers, r.Write.Seconds(), r.PerSecond())
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--writers %q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}
