// Command kubectl-herald is Herald's kubectl plugin: "kubectl herald
// migrate" converts a MetalLB configuration (and, with --plan, prints the
// takeover script for the cluster), "kubectl herald status" shows who
// announces what, "kubectl herald drain" stops Herald announcing from a
// node before kubectl drain. The logic lives in internal/migratecmd (on
// internal/migrate) and internal/statusview; this file parses arguments
// and wires clients.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/internal/draincmd"
	"github.com/herald-lb/herald/internal/migratecmd"
	"github.com/herald-lb/herald/internal/statusview"
)

const usage = `Usage:
  kubectl herald migrate [-f FILE|DIR|- ...] [--allow-partial] [--namespace NS] > herald-config.yaml
  kubectl herald migrate --plan [--config-file herald-config.yaml] > takeover.sh
  kubectl herald status [--namespace NS] [svc NAME | ip ADDR | node NAME]
  kubectl herald drain [--timeout 5m] NODE   (label herald.dev/drain, wait until NODE announces nothing)
  kubectl herald drain --undo NODE           (remove the label; also: kubectl herald undrain NODE)
Common flags: --kubeconfig PATH, --context NAME.
migrate exits 3 when something could not be translated (unless --allow-partial).
`

// files collects repeated -f flags.
type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "migrate":
		err = runMigrate(ctx, args[1:], stdin, stdout, stderr)
	case "status":
		err = runStatus(ctx, args[1:], stdout, stderr)
	case "drain":
		err = runDrain(ctx, args[1:], false, stdout, stderr)
	case "undrain":
		err = runDrain(ctx, args[1:], true, stdout, stderr)
	default:
		err = usageError(fmt.Errorf("unknown command %q", args[0]))
	}
	var ue usageErr
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kubectl herald: %v\n%s", err, usage)
		return 2
	case errors.Is(err, draincmd.ErrTimeout):
		fmt.Fprintln(stderr, "kubectl herald:", err)
		return 4
	case errors.Is(err, migratecmd.ErrPartial):
		fmt.Fprintln(stderr, "kubectl herald:", err)
		return 3
	}
	fmt.Fprintln(stderr, "kubectl herald:", err)
	return 1
}

type usageErr struct{ error }

func usageError(err error) error { return usageErr{err} }

// clusterFlags are the flags that reach the cluster.
type clusterFlags struct{ kubeconfig, context string }

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&c.context, "context", "", "kubeconfig context (default: the current one)")
}

func (c *clusterFlags) config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-herald"
	return cfg, nil
}

func (c *clusterFlags) clients() (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	return kube, dyn, err
}

func runMigrate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.register(fs)
	var in files
	o := migratecmd.RunOptions{Stdin: stdin, Out: stdout, Err: stderr}
	fs.Var(&in, "f", "MetalLB YAML: a file, a directory, or - for standard input (repeatable); without it, read the cluster")
	fs.BoolVar(&o.Plan, "plan", false, "print the ordered takeover steps for this cluster as a shell script")
	fs.BoolVar(&o.AllowPartial, "allow-partial", false, "exit 0 even when some MetalLB configuration could not be translated")
	fs.StringVar(&o.HeraldNamespace, "namespace", "herald-system", "Herald's namespace (where BGP password Secrets go)")
	fs.StringVar(&o.ConfigFile, "config-file", "herald-config.yaml", "with --plan: the file the script applies the converted configuration from")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Errorf("migrate: unexpected arguments %v", fs.Args()))
	}
	o.Files = in
	if len(in) == 0 || o.Plan {
		kube, dyn, err := cf.clients()
		if err != nil {
			return err
		}
		o.Kube, o.Dynamic = kube, dyn
	}
	return migratecmd.Run(ctx, o)
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.register(fs)
	ns := fs.String("namespace", "herald-system", "Herald's namespace (where the announcement hold Lease would be)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := parseFilter(fs.Args())
	if err != nil {
		return usageError(err)
	}
	kube, dyn, err := cf.clients()
	if err != nil {
		return err
	}
	in, err := statusview.Fetch(ctx, kube, dyn, *ns)
	if err != nil {
		return err
	}
	return statusview.Build(in, f).Write(stdout)
}

// runDrain is "drain [--undo] NODE" and "undrain NODE"; the logic is in
// internal/draincmd.
func runDrain(ctx context.Context, args []string, undo bool, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.register(fs)
	o := draincmd.Options{Out: stdout, Poll: time.Second}
	fs.BoolVar(&o.Undo, "undo", undo, "remove the drain label: Herald may announce from the node again")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait until the node announces nothing (the label stays when it runs out; exit 4)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fmt.Errorf("%s takes one NODE", fs.Name()))
	}
	o.Node = fs.Arg(0)
	cfg, err := cf.config()
	if err != nil {
		return err
	}
	if o.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if o.Herald, err = versioned.NewForConfig(cfg); err != nil {
		return err
	}
	return draincmd.Run(ctx, o)
}

// parseFilter reads "svc NAME", "ip ADDR" or "node NAME".
func parseFilter(args []string) (statusview.Filter, error) {
	var f statusview.Filter
	switch {
	case len(args) == 0:
		return f, nil
	case len(args) != 2:
		return f, fmt.Errorf("status takes svc NAME, ip ADDR or node NAME")
	}
	switch args[0] {
	case "svc", "service":
		f.Service = args[1]
	case "ip":
		ip, err := netip.ParseAddr(args[1])
		if err != nil {
			return f, fmt.Errorf("status ip: %q is not an IP address", args[1])
		}
		f.IP = ip
	case "node":
		f.Node = args[1]
	default:
		return f, fmt.Errorf("status: %q is not svc, ip or node", args[0])
	}
	return f, nil
}
