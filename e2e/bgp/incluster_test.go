package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestPodReachesBGPAddress: a pod inside the cluster that connects to a
// BGP LoadBalancer address (ipMode VIP in the Service's status) is
// answered by the Service's pod on another node, for both families; the
// connection is translated by kube-proxy on the client pod's own node
// (its conntrack entry for the address has the backend pod as the
// replying side), not sent out to the router and back.
func TestPodReachesBGPAddress(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	all := allNodes(l)
	_, ips := suite.Service(t, "inside", poolMain, dualStack, "node2")
	s, err := l.Client().CoreV1().Services(testNS).Get(ctx, "inside", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
			t.Errorf("ingress %s: ipMode %v, want VIP", in.IP, in.IPMode)
		}
	}
	client, err := l.Backend(ctx, testNS, "node1")
	if err != nil {
		t.Fatal(err)
	}
	backend, err := l.Backend(ctx, testNS, "node2")
	if err != nil {
		t.Fatal(err)
	}
	for _, vip := range ips {
		waitFIB(t, l, host(vip), all...)
		want, fam := backend.IPv4, "ipv4"
		if vip.Is6() {
			want, fam = backend.IPv6, "ipv6"
		}
		// kube-proxy on node1 may not have the address yet when the route
		// is there: a request sent out to the router meanwhile is answered
		// too, but not translated on node1
		var answer lab.PodAnswer
		labkit.EventuallyWhy(t, 30*time.Second, "pod "+client.Name+" answered through "+vip.String()+", translated on node1", func() (bool, string) {
			answer, err = l.HTTPGetFromPod(ctx, testNS, client.Name, vip, 80)
			if err != nil {
				return false, err.Error()
			}
			out, err := l.Exec(ctx, "node1", "conntrack", "-L", "-f", fam, "-p", "tcp", "-d", vip.String())
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(out, "src="+want.String()+" "), fmt.Sprintf("node1's connections to %s:\n%s", vip, out)
		})
		if answer.Node != "node2" {
			t.Errorf("%s answered by %s on %q, want the pod on node2", vip, answer.Pod, answer.Node)
		}
		t.Logf("pod %s on node1 reached %s: answered by %s, which saw the client as %s", client.Name,
			netip.AddrPortFrom(vip, 80), answer.Pod, answer.Client)
	}
}
