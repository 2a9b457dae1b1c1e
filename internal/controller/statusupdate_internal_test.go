package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWroteIngress(t *testing.T) {
	ingress := metav1.NewFieldsV1(`{"f:status":{"f:loadBalancer":{"f:ingress":{}}}}`)
	conds := metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"herald.dev/Allocated\"}":{}}}}`)
	for _, tc := range []struct {
		name string
		mf   []metav1.ManagedFieldsEntry
		want bool
	}{
		{"no managers", nil, false},
		{"Herald's apply of the ingress", []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", FieldsV1: ingress}}, true},
		{"Herald's patch of the ingress", []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: ingress}}, true},
		{"Herald's conditions only", []metav1.ManagedFieldsEntry{{Manager: FieldManager, Subresource: "status", FieldsV1: conds}}, false},
		{"MetalLB's ingress", []metav1.ManagedFieldsEntry{{Manager: "metallb-controller", Subresource: "status", FieldsV1: ingress}, {Manager: FieldManager, Subresource: "status", FieldsV1: conds}}, false},
		{"not the status", []metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsV1: ingress}}, false},
	} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.mf}}
		if got := wroteIngress(svc, FieldManager); got != tc.want {
			t.Errorf("%s: wroteIngress = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The change made on a Service as read: its resourceVersion kept (the
// version the update is conditional on); ingress replaced, removed or left; Herald's conditions set or removed
// by type, another controller's kept in its place.
func TestStatusChangeApply(t *testing.T) {
	vip := corev1.LoadBalancerIPModeVIP
	t0, t1 := metav1.Unix(0, 0).Rfc3339Copy(), metav1.Unix(60, 0).Rfc3339Copy()
	other := metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: t0}
	allocated := metav1.Condition{Type: "herald.dev/Allocated", Status: metav1.ConditionFalse, Reason: "Pending", Message: "old", LastTransitionTime: t0}
	announced := metav1.Condition{Type: "herald.dev/Announced", Status: metav1.ConditionUnknown, Reason: "Waiting", LastTransitionTime: t0}
	read := func() *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "6"}}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.9", IPMode: &vip}}
		s.Status.Conditions = []metav1.Condition{allocated, other, announced}
		return s
	}
	newAllocated := metav1.Condition{Type: "herald.dev/Allocated", Status: metav1.ConditionTrue, Reason: "Allocated", Message: "m", ObservedGeneration: 2, LastTransitionTime: t1}
	newReady := metav1.Condition{Type: "herald.dev/Ready", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: t1}
	in := []corev1.LoadBalancerIngress{{IP: "198.51.100.1", IPMode: &vip}}

	set := &statusChange{}
	set.replaceIngress(in)
	set.setConditions([]metav1.Condition{newAllocated, newReady})
	remove := &statusChange{}
	remove.replaceIngress(nil)
	remove.removeHeraldConditions(read().Status.Conditions)
	nothing := &statusChange{}
	nothing.removeHeraldConditions([]metav1.Condition{other})
	for _, tc := range []struct {
		name      string
		p         *statusChange
		ingress   []corev1.LoadBalancerIngress
		conds     []metav1.Condition
		wantEmpty bool
	}{
		{"set", set, in, []metav1.Condition{newAllocated, other, announced, newReady}, false},
		{"remove", remove, nil, []metav1.Condition{other}, false},
		{"nothing", nothing, read().Status.LoadBalancer.Ingress, read().Status.Conditions, true},
	} {
		s := read()
		tc.p.applyTo(s)
		if s.ResourceVersion != "6" || !equality.Semantic.DeepEqual(s.Status.LoadBalancer.Ingress, tc.ingress) ||
			!equality.Semantic.DeepEqual(s.Status.Conditions, tc.conds) {
			t.Errorf("%s: got version %s, ingress %+v, conditions %+v", tc.name, s.ResourceVersion, s.Status.LoadBalancer.Ingress, s.Status.Conditions)
		}
		if tc.p.empty() != tc.wantEmpty {
			t.Errorf("%s: empty() = %v", tc.name, !tc.wantEmpty)
		}
	}
}
