package lab_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
)

func TestControlPlane(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	cs := l.Client()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("readyz: %q %v", body, err)
	}
	if !strings.HasPrefix(l.APIServerURL(), "https://"+lab.RootIPv4+":") {
		t.Errorf("API server at %s, want %s only", l.APIServerURL(), lab.RootIPv4)
	}
	res, err := cs.Discovery().ServerResourcesForGroupVersion("herald.dev/v1beta1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range res.APIResources {
		if !strings.Contains(r.Name, "/") {
			kinds = append(kinds, r.Kind)
		}
	}
	slices.Sort(kinds)
	want := []string{"BFDProfile", "BGPAdvertisement", "BGPPeer", "Community", "IPAddressPool", "L2Advertisement", "SpeakerStatus"}
	if !slices.Equal(kinds, want) {
		t.Errorf("herald.dev kinds %v, want %v", kinds, want)
	}
}

func TestNodesReady(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	nodes, err := l.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(l.Nodes()) {
		t.Fatalf("%d Node objects, want %d", len(nodes.Items), len(l.Nodes()))
	}
	for _, n := range l.Nodes() {
		node, err := l.Client().CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ips = append(ips, a.Address)
			}
		}
		if !slices.Equal(ips, []string{n.IPv4.String(), n.IPv6.String()}) {
			t.Errorf("%s InternalIPs %v", n.Name, ips)
		}
		if len(node.Spec.Taints) != 0 || !ready(node) {
			t.Errorf("%s: taints %v, ready %v", n.Name, node.Spec.Taints, ready(node))
		}
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestRouterListens(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	out, err := l.Exec(ctx, lab.Router, "ss", "-Htln", "sport = :179")
	if err != nil || !strings.Contains(out, ":179") {
		t.Fatalf("nothing listens on 179 in the router: %q %v", out, err)
	}
	if _, err := l.RouterCLI(ctx, "show bgp summary"); err != nil {
		t.Error(err)
	}
}

func TestClientReachesEveryNode(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	for _, n := range l.Nodes() {
		for _, a := range []string{n.IPv4.String(), n.IPv6.String()} {
			if err := l.Ping(ctx, lab.Client, addr(a)); err != nil {
				t.Errorf("client -> %s %s: %v", n.Name, a, err)
			}
		}
		// and the pods behind them, through the router, from outside
		if err := l.EnsureBackends(ctx, "smoke"); err != nil {
			t.Fatal(err)
		}
		pod, err := l.Backend(ctx, "smoke", n.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []netip.Addr{pod.IPv4, pod.IPv6} {
			got, err := l.HTTPGet(ctx, lab.External, a, 8080)
			if err != nil || got.Pod != pod.Name || got.Node != n.Name {
				t.Errorf("ext -> %s %s: %+v %v", pod.Name, a, got, err)
			}
		}
	}
}

func TestRootNamespaceHasOnlyItsLeg(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	for _, fam := range []string{"-4", "-6"} {
		out, err := l.Exec(ctx, lab.Root, "ip", fam, "route", "show", "table", "all")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "198.51.100.") && !strings.Contains(line, "2001:db8") {
				continue
			}
			if !strings.Contains(line, "dev herald"+l.RunID()) {
				t.Errorf("root namespace route into the lab range not on the leg: %s", line)
			}
			if strings.Contains(line, " via ") {
				t.Errorf("root namespace has a gatewayed route into the lab: %s", line)
			}
		}
	}
}

func TestExecAndStart(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	p, err := l.Start("node2", "sleeper", []string{"sleep", "300"}, []string{"HERALD_TEST=1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Exec(ctx, "node2", "ip", "netns", "identify", fmt.Sprint(p.PID()))
	if err != nil || strings.TrimSpace(out) != l.NS("node2") {
		t.Errorf("pid %d runs in %q (%v), want %s", p.PID(), out, err, l.NS("node2"))
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Error("still running after Stop")
	}
	if _, err := l.Exec(ctx, "nosuchhost", "true"); err == nil {
		t.Error("Exec in an unknown host worked")
	}
}

// TestAtLabWeight: the test process, and what it starts meanwhile, runs
// in the lab's process cgroup until it moves back.
func TestAtLabWeight(t *testing.T) {
	l := lab.Shared(t)
	ctx := ctxFor(t, time.Minute)
	cpuCgroup := func(procCgroup string) string {
		for _, line := range strings.Split(procCgroup, "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
				return parts[2]
			}
		}
		t.Fatalf("no cpu cgroup in %q", procCgroup)
		return ""
	}
	own := func() string {
		data, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		return cpuCgroup(string(data))
	}
	before := own()
	restore := l.AtLabWeight()
	during := own()
	child, err := l.Exec(ctx, "root", "cat", "/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if !strings.HasSuffix(during, "_lab") || cpuCgroup(child) != during {
		t.Errorf("at the lab's weight the test is in cpu cgroup %q and its child in %q, want the lab's", during, cpuCgroup(child))
	}
	if after := own(); after != before {
		t.Errorf("moved back to %q, want %q", after, before)
	}
}
