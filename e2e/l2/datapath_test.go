package l2

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestTrafficReachesPodThroughKubeProxy: a Service with
// allocateLoadBalancerNodePorts false is announced, and an HTTP request
// from the client (no static neighbour entry) reaches a pod through the
// owner's kube-proxy.
func TestTrafficReachesPodThroughKubeProxy(t *testing.T) {
	l, _ := suite.Herald(t)
	svc, ips := suite.Service(t, "web", poolL2, nil, "node2")
	if svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts {
		t.Fatal("the lab's Service should not allocate node ports")
	}
	harness.Owner(t, l, ips[0])
	var answer lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through the VIP", func() bool {
		var err error
		answer, err = l.HTTPGet(context.Background(), lab.Client, ips[0], 80)
		return err == nil
	})
	if answer.Node != "node2" {
		t.Errorf("answered by %s on %q, want a pod on node2", answer.Pod, answer.Node)
	}
	t.Logf("%s:80 answered by %s, which saw the client as %s", ips[0], answer.Pod, answer.Client)
}

// TestTrafficFromPodInsideCluster: a pod (the backend) on a node that announces neither
// of a dual-stack Service's addresses connects to each, and a backend
// answers. Herald writes ipMode VIP, so the pod's own node's kube-proxy
// takes the traffic to a backend: the backend sees it from that node (its
// address, or its bridge's when the backend is on it: kube-proxy
// masquerades traffic to a load balancer address under ETP Cluster), not
// from the owner. A pod also reaches an address Herald assigned that no
// node announces (pool dark has no L2Advertisement).
func TestTrafficFromPodInsideCluster(t *testing.T) {
	l, _ := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "from-pod", poolL2, dualStack, "node1", "node2", "node3")
	_, dark := suite.Service(t, "from-pod-dark", poolL2, fromPool("dark"), "node1", "node2", "node3")
	svc, err := l.Client().CoreV1().Services(testNS).Get(ctx, "from-pod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
			t.Errorf("ingress %s has ipMode %v, want VIP", in.IP, in.IPMode)
		}
	}
	owners := []string{harness.Owner(t, l, ips[0]), harness.Owner(t, l, ips[1])}
	harness.Nobody(t, l, dark[0])
	var from lab.Node
	for _, n := range l.Nodes() {
		if !slices.Contains(owners, n.Name) {
			from = n
			break
		}
	}
	client, err := l.Backend(ctx, testNS, from.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range append(slices.Clone(ips), dark[0]) {
		// kube-proxy on the client's node may not have the address yet
		var a lab.PodAnswer
		labkit.EventuallyWhy(t, 30*time.Second, "pod "+client.Name+" answered through "+addr.String(), func() (bool, string) {
			a, err = l.HTTPGetFromPod(ctx, testNS, client.Name, addr, 80)
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		t.Logf("%s:80 from pod %s on %s (owners %v): answered by %s on %s, which saw %s", addr, client.Name, from.Name, owners, a.Pod, a.Node, a.Client)
		if !strings.HasPrefix(a.Pod, lab.BackendName("")) {
			t.Errorf("%s answered by %q, not a backend", addr, a.Pod)
		}
		if src := a.ClientAddr.Addr(); !onNode(from, src) {
			t.Errorf("%s: the backend saw the request from %s, not from the client pod's node %s", addr, src, from.Name)
		}
	}
}

// onNode says whether a is one of node's addresses: on the segment, or in
// its pod subnets (its pods, its bridge).
func onNode(n lab.Node, a netip.Addr) bool {
	return a == n.IPv4 || a == n.IPv6 || n.Pod.CIDRv4.Contains(a) || n.Pod.CIDRv6.Contains(a)
}

// dualStack makes a Service require both IP families.
func dualStack(s *corev1.Service) {
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	p := corev1.IPFamilyPolicyRequireDualStack
	s.Spec.IPFamilyPolicy = &p
}
