package l2

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestIPv4OneNodeAnswers(t *testing.T) {
	l, _ := herald(t)
	_, ips := service(t, l, "v4", nil, "node2")
	vip := ips[0]
	node := owner(t, l, vip)
	answers := probe(t, l, vip)
	n, _ := l.Node(node)
	if len(answers) != 1 || answers[0].MAC.String() != n.MAC.String() {
		t.Errorf("answers %+v, want one from %s (%s)", answers, node, n.MAC)
	}
	neighbour := vip.Next()
	if a := probe(t, l, neighbour); len(a) != 0 {
		t.Errorf("an unassigned address %s was answered: %+v", neighbour, a)
	}
	if err := l.DeleteService(context.Background(), testNS, "v4"); err != nil {
		t.Fatal(err)
	}
	nobody(t, l, vip)
}

func TestIPv6OneNodeAnswersMulticastAndUnicast(t *testing.T) {
	l, _ := herald(t)
	_, ips := service(t, l, "v6", func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	}, "node1")
	vip := ips[0]
	node := owner(t, l, vip)
	uni, err := l.NDPProbe(context.Background(), vip, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(uni) != 1 || uni[0].Node != node {
		t.Errorf("unicast NS answered by %+v, want %s", uni, node)
	}
	if a := probe(t, l, netip.MustParseAddr("2001:db8:1::7e")); len(a) != 0 {
		t.Errorf("an unassigned IPv6 address was answered: %+v", a)
	}
	if err := l.DeleteService(context.Background(), testNS, "v6"); err != nil {
		t.Fatal(err)
	}
	nobody(t, l, vip)
}

func TestDualStackBothFamiliesAnswered(t *testing.T) {
	l, _ := herald(t)
	_, ips := service(t, l, "dual", func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &p, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}, "node1")
	for _, ip := range ips {
		owner(t, l, ip)
	}
}
