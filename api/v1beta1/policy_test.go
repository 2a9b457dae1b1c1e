package v1beta1_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestSelectorPolicies installs manifests/policies.yaml and checks that the
// API server refuses, when they are applied, the label selectors Herald's
// parser would set aside, naming the object and the field; that valid
// selectors pass; and that an object stored with a bad selector before
// the policy existed can still have its metadata edited and be deleted.
func TestSelectorPolicies(t *testing.T) {
	dc := dynamicClient(t)
	ctx := context.Background()
	legacy := object(t, "L2Advertisement", "legacy-bad-selector", "nodeSelectors: [{matchExpressions: [{key: zone, operator: in, values: [a]}]}]")
	legacy.SetFinalizers([]string{"example.com/hold"})
	if _, err := dc.Resource(gvr("L2Advertisement")).Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating an object with a bad selector before the policy: %v", err)
	}
	installPolicies(t)

	cases := []struct{ kind, spec, want string }{
		{"L2Advertisement", "nodeSelectors: [{matchExpressions: [{key: zone, operator: in, values: [a]}]}]",
			"L2Advertisement %s: spec.nodeSelectors: every matchExpressions operator must be In, NotIn, Exists or DoesNotExist"},
		{"L2Advertisement", "ipAddressPoolSelectors: [{matchLabels: {a: b}}, {matchExpressions: [{key: zone, operator: Gt, values: ['1']}]}]\nserviceSelectors: [{matchExpressions: [{key: app, operator: notin, values: [x]}]}]",
			"L2Advertisement %s: spec.ipAddressPoolSelectors, spec.serviceSelectors: every matchExpressions operator"},
		{"BGPAdvertisement", "serviceSelectors: [{matchExpressions: [{key: app, operator: In, values: []}]}]",
			"BGPAdvertisement %s: spec.serviceSelectors: matchExpressions with the operator In or NotIn need at least one value"},
		{"BGPAdvertisement", "nodeSelectors: [{matchExpressions: [{key: app, operator: NotIn}]}]",
			"BGPAdvertisement %s: spec.nodeSelectors: matchExpressions with the operator In or NotIn need at least one value"},
		{"BGPAdvertisement", "ipAddressPoolSelectors: [{matchExpressions: [{key: app, operator: Exists, values: [x]}]}]",
			"BGPAdvertisement %s: spec.ipAddressPoolSelectors: matchExpressions with the operator Exists or DoesNotExist take no values"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nserviceAllocation: {namespaceSelectors: [{matchExpressions: [{key: team, operator: In}]}]}",
			"IPAddressPool %s: spec.serviceAllocation.namespaceSelectors: matchExpressions with the operator In or NotIn"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nserviceAllocation: {serviceSelectors: [{matchExpressions: [{key: team, operator: exists}]}]}",
			"IPAddressPool %s: spec.serviceAllocation.serviceSelectors: every matchExpressions operator"},
		{"BGPPeer", okPeer + "nodeSelectors: [{matchExpressions: [{key: rack, operator: DoesNotExist, values: [r1]}]}]",
			"BGPPeer %s: spec.nodeSelectors: matchExpressions with the operator Exists or DoesNotExist take no values"},
	}
	for i, tc := range cases {
		name := "bad-selector-" + itoa(i)
		_, err := dc.Resource(gvr(tc.kind)).Create(ctx, object(t, tc.kind, name, tc.spec), metav1.CreateOptions{})
		want := strings.Replace(tc.want, "%s", name, 1)
		if err == nil {
			t.Errorf("%s with a bad selector accepted:\n%s", tc.kind, tc.spec)
		} else if !strings.Contains(err.Error(), want) {
			t.Errorf("%s refused without naming the object and field %q:\n%v", tc.kind, want, err)
		}
	}

	valid := []struct{ kind, spec string }{
		{"L2Advertisement", "nodeSelectors: [{matchLabels: {a: b}, matchExpressions: [{key: zone, operator: In, values: [a, b]}, {key: rack, operator: NotIn, values: [r1]}, {key: gpu, operator: Exists}, {key: spot, operator: DoesNotExist, values: []}]}]"},
		{"BGPAdvertisement", "serviceSelectors: [{}, {matchLabels: {app: web}}]\nipAddressPoolSelectors: [{matchExpressions: []}]"},
		{"IPAddressPool", "addresses: [198.51.100.64/27]\nserviceAllocation: {namespaceSelectors: [{matchExpressions: [{key: team, operator: In, values: [a]}]}]}"},
		{"IPAddressPool", "addresses: [198.51.100.96/27]"},
		{"BGPPeer", okPeer},
	}
	for i, v := range valid {
		if _, err := dc.Resource(gvr(v.kind)).Create(ctx, object(t, v.kind, "good-selector-"+itoa(i), v.spec), metav1.CreateOptions{}); err != nil {
			t.Errorf("valid %s refused: %v\n%s", v.kind, err, v.spec)
		}
	}

	// The object stored before the policy: a spec edit that keeps the bad
	// selector is refused, its finalizers can go, and it can be deleted.
	res := dc.Resource(gvr("L2Advertisement"))
	spec := []byte(`{"spec":{"interfaces":["eth0"]}}`)
	if _, err := res.Patch(ctx, "legacy-bad-selector", types.MergePatchType, spec, metav1.PatchOptions{}); err == nil {
		t.Errorf("a spec edit keeping a bad selector was accepted")
	}
	if _, err := res.Patch(ctx, "legacy-bad-selector", types.MergePatchType, []byte(`{"metadata":{"finalizers":null,"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("removing the finalizer of an object stored with a bad selector: %v", err)
	}
	if err := res.Delete(ctx, "legacy-bad-selector", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting an object stored with a bad selector: %v", err)
	}
}

// installPolicies creates the policies and bindings of
// manifests/policies.yaml and waits until the API server enforces them
// (its admission plugin loads them asynchronously).
func installPolicies(t *testing.T) {
	t.Helper()
	dc := dynamicClient(t)
	ctx := context.Background()
	for _, obj := range readObjects(t, filepath.Join(repoRoot(t), "manifests", "policies.yaml")) {
		gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		resource := map[string]string{
			"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
			"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
		}[obj.GetKind()]
		if resource == "" {
			t.Fatalf("manifests/policies.yaml: unexpected %s", obj.GetKind())
		}
		if _, err := dc.Resource(gv.WithResource(resource)).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	probe := object(t, "BGPPeer", "policy-probe", okPeer+"nodeSelectors: [{matchExpressions: [{key: a, operator: in, values: [b]}]}]")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dc.Resource(gvr("BGPPeer")).Create(ctx, probe, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "herald-bgppeers-selectors") {
			break
		}
		if err == nil {
			_ = dc.Resource(gvr("BGPPeer")).Delete(ctx, "policy-probe", metav1.DeleteOptions{})
		}
		if time.Now().After(deadline) {
			t.Fatalf("the selector policies were not enforced within 30 s (last create: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
