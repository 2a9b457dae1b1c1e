package demo

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/testenv"
)

// TestMakeDemo runs what `make demo` runs (the herald-demo command, which
// leaves a detached lab up), checks its report and, through the lab's API
// server, that each demo Service's status holds the address the report
// printed with ipMode VIP, then takes the lab down with `herald-lab down`,
// as a user would with `make lab-down`.
func TestMakeDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the demo needs root (network namespaces)")
	}
	if testing.Short() {
		t.Skip("-short: no lab")
	}
	goEnv, err := testenv.GoEnv()
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	run := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./e2e/cmd/" + args[0]}, args[1:]...)...)
		cmd.Dir = root
		// the demo's lab is held for this process: killed, it leaves no lab
		// that the next run would refuse to replace
		cmd.Env = append(slices.Clone(goEnv), fmt.Sprintf("%s=%d", lab.HolderEnv, os.Getpid()))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	start := time.Now()
	out, err := run(10*time.Minute, "herald-demo", "-port", "16443")
	t.Logf("make demo took %s; its report:\n%s", time.Since(start).Round(time.Second), out)
	if regexp.MustCompile(`Lab run \S+ is up`).MatchString(out) {
		// the demo started a lab of its own: take it down as `make lab-down` would
		t.Cleanup(func() {
			if out, err := run(2*time.Minute, "herald-lab", "down"); err != nil {
				t.Errorf("herald-lab down: %v\n%s", err, out)
			}
		})
	}
	if err != nil {
		t.Fatalf("herald-demo: %v", err)
	}
	for what, re := range map[string]string{
		"an L2 address":              `Service demo/demo-l2 .*\n  address +198\.51\.100\.(6[4-9]|[7-9][0-9]) \(ipMode VIP\)`,
		"one ARP owner":              `ARP answer +([0-9a-f]{2}:){5}[0-9a-f]{2} = node[123]`,
		"a BGP address":              `Service demo/demo-bgp .*\n  address +198\.51\.100\.1[2-5][0-9] \(ipMode VIP\)`,
		"routes with three hops":     `router routes +198\.51\.100\.1[2-5][0-9]/32 via [^\n]*\(node1\), [^\n]*\(node2\), [^\n]*\(node3\)`,
		"HTTP through the L2 VIP":    `HTTP +from client to 198\.51\.100\.[0-9]+:443 -> answered by backend-node[23]-\S+ on node[23]`,
		"HTTP through the BGP VIP":   `HTTP +from ext to 198\.51\.100\.[0-9]+:443 -> answered by backend-node[23]-\S+ on node[23]`,
		"the Service's events":       `EnsuredLoadBalancer`,
		"how to take the lab down":   `make lab-down`,
		"the kubeconfig to look at ": `export KUBECONFIG=`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the report lacks %s (%s)", what, re)
		}
	}
	if strings.Count(out, "ARP answer") != 1 {
		t.Errorf("want exactly one node answering ARP for the L2 address")
	}
	checkStatus(t, out)
}

// checkStatus reads the demo Services from the API server the report's
// kubeconfig names: each has one ingress entry per family, every entry
// with ipMode VIP and in the Service's pool, the IPv4 one the address
// the report printed.
func checkStatus(t *testing.T, report string) {
	t.Helper()
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatal("the report names no kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", m[1])
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", m[1], err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, pool := range map[string]netip.Prefix{
		"demo-l2":  netip.MustParsePrefix("198.51.100.64/27"),
		"demo-bgp": netip.MustParsePrefix("198.51.100.128/27"),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		svc, err := kube.CoreV1().Services(Namespace).Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Errorf("Service %s/%s: %v", Namespace, name, err)
			continue
		}
		ingress := svc.Status.LoadBalancer.Ingress
		if len(ingress) == 0 {
			t.Errorf("Service %s/%s has no status.loadBalancer.ingress", Namespace, name)
			continue
		}
		printed := false
		for _, in := range ingress {
			mode := "unset"
			if in.IPMode != nil {
				mode = string(*in.IPMode)
			}
			if mode != string(corev1.LoadBalancerIPModeVIP) {
				t.Errorf("Service %s/%s: ingress %s has ipMode %s, want VIP", Namespace, name, in.IP, mode)
			}
			ip, err := netip.ParseAddr(in.IP)
			if err != nil {
				t.Errorf("Service %s/%s: ingress IP %q: %v", Namespace, name, in.IP, err)
				continue
			}
			if ip.Is4() && !pool.Contains(ip) {
				t.Errorf("Service %s/%s: %s is outside its pool %s", Namespace, name, ip, pool)
			}
			want := fmt.Sprintf("Service %s/%s (port 443 -> pods' 8443)\n  address          %s (ipMode %s)\n", Namespace, name, ip, mode)
			printed = printed || strings.Contains(report, want)
		}
		if !printed {
			t.Errorf("the report does not print Service %s/%s's address as its status holds it (%+v)", Namespace, name, ingress)
		}
	}
}
