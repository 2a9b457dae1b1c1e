package migratecmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/herald-lb/herald/internal/migrate"
	"github.com/herald-lb/herald/internal/service"
)

func selector(l map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: l}
}

func unstructuredObj(gvr schema.GroupVersionResource, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func lbService(name string, annotations map[string]string, ip string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if ip != "" {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	}
	return s
}

var pools = schema.GroupVersionResource{Group: migrate.MetalLBGroup, Version: "v1beta1", Resource: "ipaddresspools"}

func dynamicWith(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	lists := map[schema.GroupVersionResource]string{FRRConfigurations: "FRRConfigurationList"}
	for _, r := range metalLBResources() {
		for _, v := range r.versions {
			lists[schema.GroupVersionResource{Group: migrate.MetalLBGroup, Version: v, Resource: r.resource}] = r.resource + "List"
		}
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
}

// ReadInventory finds MetalLB's workloads (by its manifests' labels or
// names), its webhooks, the FRRConfigurations its speakers generated and
// the Services holding its addresses, and nothing else, in name order.
func TestReadInventory(t *testing.T) {
	metallb := map[string]string{"app": "metallb", "component": "speaker"}
	kube := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "controller"},
			Spec: appsv1.DeploymentSpec{Selector: selector(map[string]string{"app": "metallb", "component": "controller"})}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "speaker", Labels: metallb},
			Spec: appsv1.DaemonSetSpec{Selector: selector(metallb)}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "frr-k8s-daemon"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy"}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "metallb-webhook-configuration"}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-webhook"}},
		lbService("web", map[string]string{service.MetalLBAllocatedFromPool: "default"}, "198.51.100.10"),
		lbService("pending", map[string]string{service.MetalLBAllocatedFromPool: "default"}, ""),
		lbService("other", nil, "198.51.100.11"),
	)
	dyn := dynamicWith(
		unstructuredObj(FRRConfigurations, "FRRConfiguration", "metallb-system", "metallb-node2", nil),
		unstructuredObj(FRRConfigurations, "FRRConfiguration", "metallb-system", "metallb-node1", nil),
		unstructuredObj(FRRConfigurations, "FRRConfiguration", "metallb-system", "operator-made", nil),
	)
	inv, err := ReadInventory(context.Background(), kube, dyn)
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]string{
		"controllers":       fmt.Sprint(inv.Controllers),
		"speakers":          fmt.Sprint(inv.Speakers),
		"frr-k8s":           fmt.Sprint(inv.FRRK8s),
		"webhooks":          fmt.Sprint(inv.Webhooks),
		"frrconfigurations": fmt.Sprint(inv.FRRConfigurations),
		"services":          fmt.Sprint(inv.Services),
	} {
		want := map[string]string{
			"controllers":       "[deployment/metallb-system/controller]",
			"speakers":          "[daemonset/metallb-system/speaker]",
			"frr-k8s":           "[daemonset/metallb-system/frr-k8s-daemon]",
			"webhooks":          "[metallb-webhook-configuration]",
			"frrconfigurations": "[{metallb-system metallb-node1} {metallb-system metallb-node2}]",
			"services":          "1",
		}[what]
		if got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	if inv.Speakers[0].Selector != "app=metallb,component=speaker" {
		t.Errorf("speaker selector %q", inv.Speakers[0].Selector)
	}
}

// ReadCluster reads MetalLB's objects and the FRRConfigurations an
// operator wrote (reported as dropped by the conversion), not the ones
// MetalLB generated; a resource the cluster does not serve is skipped.
func TestReadCluster(t *testing.T) {
	dyn := dynamicWith(
		unstructuredObj(pools, "IPAddressPool", "metallb-system", "first", map[string]any{"addresses": []any{"198.51.100.64/28"}}),
		unstructuredObj(FRRConfigurations, "FRRConfiguration", "metallb-system", "metallb-node1", nil),
		unstructuredObj(FRRConfigurations, "FRRConfiguration", "metallb-system", "operator-made", nil),
	)
	src, err := ReadCluster(context.Background(), dyn)
	if err != nil {
		t.Fatal(err)
	}
	res := migrate.Convert(src, migrate.Options{HeraldNamespace: "herald-system"})
	var names []string
	for _, o := range res.Objects {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, o.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetName())
	}
	if fmt.Sprint(names) != "[IPAddressPool/first]" {
		t.Errorf("converted %v, want the pool alone", names)
	}
	var b strings.Builder
	if err := res.Report.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "operator-made") || strings.Contains(b.String(), "metallb-node1") {
		t.Errorf("report names the operator's FRRConfiguration and not MetalLB's own:\n%s", b.String())
	}
}
