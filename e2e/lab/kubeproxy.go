package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// startKubeProxies runs kube-proxy in every node namespace and waits until
// each reports healthy (it has synced its rules).
func (l *Lab) startKubeProxies(ctx context.Context) error {
	start := time.Now()
	err := parallel(len(l.nodes), func(i int) error { return l.startKubeProxy(ctx, l.nodes[i]) })
	if err != nil {
		return fmt.Errorf("kube-proxy: %w", err)
	}
	l.addTiming("kube-proxy synced", start)
	return nil
}

// startKubeProxy runs kube-proxy in n's namespace and waits until it
// reports healthy.
func (l *Lab) startKubeProxy(ctx context.Context, n Node) error {
	bin, err := testenv.Binary("kube-proxy")
	if err != nil {
		return err
	}
	argv := []string{bin,
		"--kubeconfig=" + l.proxyKubeconfig, "--hostname-override=" + n.Name,
		"--proxy-mode=" + string(l.opts.ProxyMode), "--cluster-cidr=" + ClusterCIDRs,
		// leave the machine-wide conntrack settings alone
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256", "--v=2",
	}
	proc, err := l.spawn(labkit.ProcessOptions{Name: "kube-proxy-" + n.Name, NS: n.NS, Argv: argv})
	if err != nil {
		return err
	}
	return l.waitHTTP(ctx, n.NS, "http://127.0.0.1:10256/healthz", proc, time.Minute)
}

// EnsureKubeProxy starts the node's kube-proxy again when it is not
// running, as its DaemonSet would on a real cluster: kube-proxy exits
// when its Node object is deleted ("Node is being deleted"), and nothing
// else restarts a lab's kube-proxy. Without it the node keeps the rules
// of that moment, stale Services and endpoints included.
func (l *Lab) EnsureKubeProxy(ctx context.Context, node string) error {
	if l.opts.NoKubeProxy || l.process("kube-proxy-"+node) != nil {
		return nil
	}
	n, err := l.Node(node)
	if err != nil {
		return err
	}
	return l.startKubeProxy(ctx, n)
}

// waitHTTP polls url from inside ns until it answers 200, proc exits or
// the timeout passes.
func (l *Lab) waitHTTP(ctx context.Context, ns, url string, proc *labkit.Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		_, err := run(ctx, labkit.InNS(ns, l.bin.labprobe, "http", "-url", url, "-timeout", "1s")...)
		if err == nil {
			return nil
		}
		last = err
		if proc != nil && proc.Exited() {
			return fmt.Errorf("%s exited (%v); last log lines:\n%s", proc.Name, proc.Err(), proc.Tail(20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering on %s after %s: %v; last log lines:\n%s", nameOf(proc), url, timeout, last, tailOf(proc))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func nameOf(p *labkit.Process) string {
	if p == nil {
		return "server"
	}
	return p.Name
}

func tailOf(p *labkit.Process) string {
	if p == nil {
		return ""
	}
	return p.Tail(20)
}

// podPorts are the ports every pod serves.
func (l *Lab) podPorts() []string {
	ports := []string{"8080", "8443"}
	for _, p := range l.opts.ExtraPodPorts {
		ports = append(ports, fmt.Sprint(p))
	}
	return ports
}
