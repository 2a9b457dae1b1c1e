package chart

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clusterScoped are the kinds of the chart's cluster-scoped objects (the
// CRDs aside: Helm installs them once, and every release shares them).
var clusterScoped = []string{"ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace"}

// TestTwoReleasesShareACluster: two releases in two namespaces (two
// installations with different load balancer classes) render no
// cluster-scoped object of the same name, so Helm installs the second
// beside the first instead of refusing to take the first's objects over;
// and each release's bindings refer to its own roles, policies and
// ServiceAccounts.
func TestTwoReleasesShareACluster(t *testing.T) {
	first := clusterObjects(t, helmTemplate(t, "--set", "namespace.create=true"))
	second := clusterObjects(t, run(t, tool(t, "helm"), "template", "second", "charts/herald", "--namespace", "herald-second",
		"--set", "namespace.create=true", "--set", "lbClass=example.com/second", "--set", "lbClassOnly=true"))
	for _, name := range slices.Sorted(maps.Keys(second)) {
		if _, ok := first[name]; ok {
			t.Errorf("both releases render %s", name)
		}
		checkOwnRelease(t, name, second[name], second, "herald-second")
	}
	for _, name := range slices.Sorted(maps.Keys(first)) {
		checkOwnRelease(t, name, first[name], first, "herald-system")
	}
}

// clusterObjects maps kind/name to each object of the rendering without a
// namespace, and fails on one whose kind is not known to be cluster-scoped
// (a namespaced object the template forgot to put in the release's
// namespace).
func clusterObjects(t *testing.T, rendered string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range decode(t, rendered) {
		if o.GetNamespace() != "" {
			continue
		}
		if !slices.Contains(clusterScoped, o.GetKind()) {
			t.Errorf("%s %s has no namespace", o.GetKind(), o.GetName())
		}
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

// checkOwnRelease: a binding of the release refers to the release's own
// role or policy (among objs) and ServiceAccounts of its namespace ns.
func checkOwnRelease(t *testing.T, name string, o *unstructured.Unstructured, objs map[string]*unstructured.Unstructured, ns string) {
	t.Helper()
	switch o.GetKind() {
	case "ClusterRoleBinding":
		role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		if _, ok := objs["ClusterRole/"+role]; !ok {
			t.Errorf("%s binds ClusterRole %q, not one of its release", name, role)
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if got, _ := s.(map[string]any)["namespace"].(string); got != ns {
				t.Errorf("%s binds a ServiceAccount of namespace %q, want %q", name, got, ns)
			}
		}
	case "ValidatingAdmissionPolicyBinding":
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
		if _, ok := objs["ValidatingAdmissionPolicy/"+policy]; !ok {
			t.Errorf("%s binds policy %q, not one of its release", name, policy)
		}
	}
}
