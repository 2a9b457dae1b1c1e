package controller_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// nodes creates Ready Node objects (there is no kubelet) and deletes them
// when the test ends.
func (e *env) nodes(names ...string) {
	e.t.Helper()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}
		got, err := e.kube.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := e.kube.CoreV1().Nodes().UpdateStatus(e.ctx, got, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		name := n
		e.t.Cleanup(func() { _ = e.kube.CoreV1().Nodes().Delete(e.ctx, name, metav1.DeleteOptions{}) })
	}
}

func (e *env) labelNode(name, key, value string) {
	e.t.Helper()
	n, err := e.kube.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n.Labels[key] = value
	if _, err := e.kube.CoreV1().Nodes().Update(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) endpointsOn(svc string, node string) {
	e.t.Helper()
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-" + node, Namespace: e.ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"198.51.100.170"}, NodeName: ptr(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
	}
	if _, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(e.ctx, es, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	// No endpointslice controller runs: the slice would outlive its Service.
	e.t.Cleanup(func() {
		_ = e.kube.DiscoveryV1().EndpointSlices(e.ns).Delete(context.Background(), es.Name, metav1.DeleteOptions{})
	})
}

func TestAnnouncedCondition(t *testing.T) {
	e := newEnv(t)
	prefix := e.ns[:8] + "-"
	n1, n2, n3 := prefix+"node1", prefix+"node2", prefix+"node3"
	e.nodes(n1, n2, n3)
	e.speakers(n1, n2, n3) // Announced is True only once a speaker confirms
	e.pool("l2", nil, "198.51.100.64/29")
	e.pool("dark", func(s *v1beta1.IPAddressPoolSpec) { s.AutoAssign = ptr(false) }, "198.51.100.128/29")
	if _, err := e.herald.HeraldV1beta1().L2Advertisements().Create(e.ctx, &v1beta1.L2Advertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "l2"}, Spec: v1beta1.L2AdvertisementSpec{IPAddressPools: []string{"l2"},
			NodeSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: []string{n1, n2, n3}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(controller.Options{})
	e.svc("web", nil)
	c := e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	if !stringsContains(c.Message, "answered by node "+prefix) {
		t.Errorf("message: %s", c.Message)
	}
	e.svc("dark", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAddressPool] = "dark" })
	e.waitCondition("dark", v1beta1.ConditionAnnounced, metav1.ConditionFalse, "NoAdvertisementMatches")

	e.svc("local", func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = map[string]string{"app": "x"}
	})
	e.waitCondition("local", v1beta1.ConditionAnnounced, metav1.ConditionFalse, "NoReadyEndpoint")
	e.endpointsOn("local", n3)
	c = e.waitCondition("local", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	if !stringsContains(c.Message, "answered by node "+n3) {
		t.Errorf("ETP Local with endpoints on %s: %s", n3, c.Message)
	}

	for _, n := range []string{n1, n2, n3} {
		e.labelNode(n, corev1.LabelNodeExcludeBalancers, "true")
	}
	e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionFalse, "NoEligibleNode")
	e.waitEvent(e.ns, "web", "UnAvailableLoadBalancer")
	e.labelNode(n2, corev1.LabelNodeExcludeBalancers, "false")
	c = e.waitCondition("web", v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	if !stringsContains(c.Message, fmt.Sprintf("answered by node %s", n2)) {
		t.Errorf(`"false" must not exclude: %s`, c.Message)
	}
}
