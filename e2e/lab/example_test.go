package lab_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// An L2 failover measurement, as an end-to-end test of Herald would write
// it (a test package has `func TestMain(m *testing.M) { lab.Main(m,
// lab.Options{}) }` and gets the lab with lab.Shared(t)). Not run: it
// needs Herald's binaries.
func Example_l2Failover() {
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Options{Nodes: 3})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	// Herald's controller in the root namespace, a speaker per node.
	kubeconfig := l.AdminKubeconfig()
	_, _ = l.Start(lab.Root, "controller", []string{"bin/controller", "--kubeconfig", kubeconfig}, nil)
	speakers := map[string]*labkit.Process{}
	for _, n := range l.Nodes() {
		sa, _ := l.ServiceAccountKubeconfig(ctx, "herald-system", "speaker")
		speakers[n.Name], _ = l.Start(n.Name, "speaker-"+n.Name,
			[]string{"bin/speaker", "--kubeconfig", sa, "--node-name", n.Name}, nil)
	}

	// A Service with its pods on node2 (the lab writes the EndpointSlices).
	svc, _ := l.CreateService(ctx, lab.LoadBalancerService("demo", "web", corev1.IPv4Protocol))
	_ = l.SetEndpoints(ctx, svc, "node2")
	vip := netip.MustParseAddr("198.51.100.64") // read it from svc.Status in a real test

	// Watch the segment, probe the VIP every 20 ms, kill the owner.
	garp, _ := l.WatchGratuitous()
	mon, _ := l.StartARPMonitor(vip, 20*time.Millisecond)
	first, _ := mon.Wait(ctx, time.Time{}, lab.Probe.Answered)
	owner := first.Answers[0].Node
	killed := time.Now()
	_ = speakers[owner].Kill()
	taken, _ := mon.Wait(ctx, killed, func(p lab.Probe) bool { return p.Answered() && p.Nodes()[0] != owner })
	probes, _ := mon.Stop()
	announced, _ := garp.Stop()

	newOwner := taken.Nodes()[0]
	g, _ := announced.First(vip, newOwner, killed)
	gap, lost := probes.After(killed).LongestGap()
	fmt.Printf("%s -> %s: gratuitous ARP after %v, first answer after %v, %d probes lost (%v), %d answered by two MACs\n",
		owner, newOwner, g.At.Sub(killed), taken.Sent.Sub(killed), lost, gap, len(probes.Conflicts()))

	// And the data path through the new owner's kube-proxy.
	answer, _ := l.HTTPGet(ctx, lab.Client, vip, 80)
	fmt.Println(answer.Pod)
}
