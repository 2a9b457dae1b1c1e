package controller

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWroteIngress(t *testing.T) {
	ingress := &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:loadBalancer":{"f:ingress":{}}}}`)}
	conds := &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"herald.dev/Allocated\"}":{}}}}`)}
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
		if got := wroteIngress(svc); got != tc.want {
			t.Errorf("%s: wroteIngress = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The patch bodies: the resourceVersion always; ingress replaced, removed
// (null) or absent; conditions set or deleted by type.
func TestStatusPatchBody(t *testing.T) {
	vip := corev1.LoadBalancerIPModeVIP
	set := newStatusPatch("7")
	set.setIngress([]corev1.LoadBalancerIngress{{IP: "198.51.100.1", IPMode: &vip}})
	set.setConditions([]metav1.Condition{{Type: "herald.dev/Allocated", Status: metav1.ConditionTrue, Reason: "Allocated", Message: "m",
		LastTransitionTime: metav1.Unix(0, 0).Rfc3339Copy()}})
	remove := newStatusPatch("8")
	remove.setIngress(nil)
	remove.removeHeraldConditions([]metav1.Condition{{Type: "example.com/Other"}, {Type: "herald.dev/Allocated"}, {Type: "herald.dev/Announced"}})
	nothing := newStatusPatch("9")
	nothing.removeHeraldConditions([]metav1.Condition{{Type: "example.com/Other"}})
	for _, tc := range []struct {
		p         *statusPatch
		want      string
		wantEmpty bool
	}{
		{set, `{"metadata":{"resourceVersion":"7"},"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.1","ipMode":"VIP"}]},` +
			`"conditions":[{"type":"herald.dev/Allocated","status":"True","lastTransitionTime":"1970-01-01T00:00:00Z","reason":"Allocated","message":"m"}]}}`, false},
		{remove, `{"metadata":{"resourceVersion":"8"},"status":{"loadBalancer":{"ingress":null},` +
			`"conditions":[{"$patch":"delete","type":"herald.dev/Allocated"},{"$patch":"delete","type":"herald.dev/Announced"}]}}`, false},
		{nothing, `{"metadata":{"resourceVersion":"9"},"status":{}}`, true},
	} {
		body, err := json.Marshal(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != tc.want {
			t.Errorf("patch\n got %s\nwant %s", body, tc.want)
		}
		if tc.p.empty() != tc.wantEmpty {
			t.Errorf("%s: empty() = %v", body, !tc.wantEmpty)
		}
	}
}
