package controller_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// TestSharedLocalCondition: two Local Services with different pods share
// an address; while no node has endpoints of both, each says
// SharedLocalIncomplete (with a Warning event) naming what is missing
// where, and herald_controller_shared_local_incomplete counts both; when
// one node gets both, the other Service's condition follows (its own
// endpoints did not change) and names that node, and the gauge is 0.
func TestSharedLocalCondition(t *testing.T) {
	e := newEnv(t)
	prefix := e.ns[:8] + "-"
	n1, n2 := prefix+"node1", prefix+"node2"
	e.nodes(n1, n2)
	e.speakers(n1, n2)
	e.pool("l2", nil, "198.51.100.64/29")
	if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"l2"},
			NodeSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: []string{n1, n2}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e.startController(controller.Options{Registerer: reg})
	e.svc("web", shared("k", corev1.ProtocolTCP, 80, true, "web"))
	addr := e.waitAnyIPs("web", 1)[0]
	e.svc("tls", shared("k", corev1.ProtocolTCP, 443, true, "tls"))
	e.waitIPs("tls", addr)
	e.endpointsOn("web", n1)
	e.endpointsOn("tls", n2)
	c := e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "SharedLocalIncomplete")
	for _, want := range []string{"Service " + e.ns + "/tls has no ready local endpoint on " + n1, "Service " + e.ns + "/web has no ready local endpoint on " + n2, "SomePorts"} {
		if !stringsContains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	e.waitEvent(e.ns, "web", "SharedLocalIncomplete", "no ready local endpoint")
	e.waitCondition("tls", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "SharedLocalIncomplete")
	e.eventually("herald_controller_shared_local_incomplete 2", 20*time.Second, func() bool {
		return gaugeValue(t, reg, "herald_controller_shared_local_incomplete") == 2
	})

	e.endpointsOn("tls", n1)
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	if !stringsContains(c.Message, "answered by node "+n1) {
		t.Errorf("%s has both, yet: %s", n1, c.Message)
	}
	e.eventually("herald_controller_shared_local_incomplete 0", 20*time.Second, func() bool {
		return gaugeValue(t, reg, "herald_controller_shared_local_incomplete") == 0
	})
}
