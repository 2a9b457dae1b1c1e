package l2

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/harness"
)

func TestIPv4OneNodeAnswers(t *testing.T) {
	l, _ := suite.Herald(t)
	_, ips := suite.Service(t, "v4", poolL2, nil, "node2")
	vip := ips[0]
	node := harness.Owner(t, l, vip)
	answers := harness.Probe(t, l, vip)
	n, _ := l.Node(node)
	if len(answers) != 1 || answers[0].MAC.String() != n.MAC.String() {
		t.Errorf("answers %+v, want one from %s (%s)", answers, node, n.MAC)
	}
	neighbour := vip.Next()
	if a := harness.Probe(t, l, neighbour); len(a) != 0 {
		t.Errorf("an unassigned address %s was answered: %+v", neighbour, a)
	}
	if err := l.DeleteService(context.Background(), testNS, "v4"); err != nil {
		t.Fatal(err)
	}
	harness.Nobody(t, l, vip)
}

func TestIPv6OneNodeAnswersMulticastAndUnicast(t *testing.T) {
	l, _ := suite.Herald(t)
	_, ips := suite.Service(t, "v6", poolL2, func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	}, "node1")
	vip := ips[0]
	node := harness.Owner(t, l, vip)
	uni, err := l.NDPProbe(context.Background(), vip, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(uni) != 1 || uni[0].Node != node {
		t.Errorf("unicast NS answered by %+v, want %s", uni, node)
	}
	if a := harness.Probe(t, l, netip.MustParseAddr("2001:db8:1::7e")); len(a) != 0 {
		t.Errorf("an unassigned IPv6 address was answered: %+v", a)
	}
	if err := l.DeleteService(context.Background(), testNS, "v6"); err != nil {
		t.Fatal(err)
	}
	harness.Nobody(t, l, vip)
}

func TestDualStackBothFamiliesAnswered(t *testing.T) {
	l, _ := suite.Herald(t)
	_, ips := suite.Service(t, "dual", poolL2, func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}, "node1")
	for _, ip := range ips {
		harness.Owner(t, l, ip)
	}
}
