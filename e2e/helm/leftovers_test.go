package helm

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
)

// checkLeftovers: after helm uninstall the CRDs stay, and in Herald's
// namespace only what the controller and the speakers made themselves
// (the member-list Secret, the leader Lease and the speakers' liveness
// Leases, as docs/operations.md says); no cluster-wide RBAC is left.
func checkLeftovers(t *testing.T, h *deploy.Herald) {
	t.Helper()
	ctx := context.Background()
	kube := h.Lab.Client()
	ns := deploy.Namespace
	out, err := h.Kubectl(ctx, "get", "crd", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range []string{"ipaddresspools", "l2advertisements", "bgppeers", "bgpadvertisements", "communities", "bfdprofiles"} {
		if !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/"+crd+".herald.dev") {
			t.Errorf("helm uninstall removed CRD %s.herald.dev", crd)
		}
	}
	var left []string
	add := func(kind, name string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("listing %s: %v", kind, err)
		}
		if name != "" {
			left = append(left, kind+"/"+name)
		}
	}
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	add("deployments", "", err)
	for _, o := range deps.Items {
		add("Deployment", o.Name, nil)
	}
	dss, err := kube.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	add("daemonsets", "", err)
	for _, o := range dss.Items {
		add("DaemonSet", o.Name, nil)
	}
	svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	add("services", "", err)
	for _, o := range svcs.Items {
		add("Service", o.Name, nil)
	}
	sas, err := kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	add("serviceaccounts", "", err)
	for _, o := range sas.Items {
		if o.Name != "default" {
			add("ServiceAccount", o.Name, nil)
		}
	}
	cms, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	add("configmaps", "", err)
	for _, o := range cms.Items {
		if o.Name != "kube-root-ca.crt" {
			add("ConfigMap", o.Name, nil)
		}
	}
	pdbs, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	add("poddisruptionbudgets", "", err)
	for _, o := range pdbs.Items {
		add("PodDisruptionBudget", o.Name, nil)
	}
	roles, err := kube.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
	add("roles", "", err)
	for _, o := range roles.Items {
		add("Role", o.Name, nil)
	}
	rbs, err := kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	add("rolebindings", "", err)
	for _, o := range rbs.Items {
		add("RoleBinding", o.Name, nil)
	}
	crs, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	add("clusterroles", "", err)
	for _, o := range crs.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ClusterRole", o.Name, nil)
		}
	}
	crbs, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	add("clusterrolebindings", "", err)
	for _, o := range crbs.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ClusterRoleBinding", o.Name, nil)
		}
	}
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	add("secrets", "", err)
	for _, o := range secrets.Items {
		if o.Name != "herald-memberlist" {
			add("Secret", o.Name, nil)
		}
	}
	leases, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	add("leases", "", err)
	for _, o := range leases.Items {
		if o.Name != "herald-controller" && !strings.HasPrefix(o.Name, "herald-speaker-") {
			add("Lease", o.Name, nil)
		}
	}
	vaps, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	add("validatingadmissionpolicies", "", err)
	for _, o := range vaps.Items {
		if strings.HasPrefix(o.Name, "herald") {
			add("ValidatingAdmissionPolicy", o.Name, nil)
		}
	}
	if len(left) > 0 {
		t.Errorf("helm uninstall left %s", strings.Join(left, ", "))
	}
}
