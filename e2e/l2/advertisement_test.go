package l2

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
)

func fromPool(pool string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Annotations["herald.dev/address-pool"] = pool }
}

func TestAdvertisementNodeSelectorAndInterfaces(t *testing.T) {
	l, _ := suite.Herald(t)
	_, ips := suite.Service(t, "node2-only", poolL2, fromPool("l2-node2"), "node1")
	if got := harness.Owner(t, l, ips[0]); got != "node2" {
		t.Errorf("the L2Advertisement selects node2 only; %s answers", got)
	}
	_, ips = suite.Service(t, "bad-interface", poolL2, fromPool("l2-badif"), "node1")
	// The owner has no usable interface, so its speaker does not report the
	// address: the condition says so instead of True.
	c := waitCondition(t, l, "bad-interface", v1beta1.ConditionAnnounced, metav1.ConditionUnknown, v1beta1.ReasonNotConfirmed)
	t.Logf("not confirmed: %s", c.Message)
	harness.Nobody(t, l, ips[0]) // nosuch0 exists on no node: the override is honoured, eth0 is not used
	waitEvent(t, l, "bad-interface", "AnnounceFailed", "no usable interface")
}

func TestPoolWithoutAdvertisementIsNotAnnounced(t *testing.T) {
	l, _ := suite.Herald(t)
	_, ips := suite.Service(t, "dark", poolL2, fromPool("dark"), "node1")
	c := waitCondition(t, l, "dark", v1beta1.ConditionAnnounced, metav1.ConditionFalse, "NoAdvertisementMatches")
	if c.Message == "" {
		t.Error("no explanation")
	}
	harness.Nobody(t, l, ips[0])
}
