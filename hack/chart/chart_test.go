package chart

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/herald-lb/herald/test/testenv"
)

// Values sets that must lint, render and apply, besides the defaults.
var valueSets = [][]string{
	nil,
	{"--set", "controller.podAntiAffinity=hard", "--set", "controller.podDisruptionBudget.enabled=false", "--set", "ignoreExcludeLB=true",
		"--set", "lbClassOnly=true", "--set", "lbClass=example.com/lb", "--set", "memberlistSecret=other-key", "--set", "speaker.priorityClassName=", "--set", "metrics.services=false",
		"--set", "speaker.bgpListen.port=1179", "--set", "speaker.bgpListen.addresses={127.0.0.1,::1}", "--set", "installation=blue"},
	{"--set", "controller.podAntiAffinity=", "--set", "controller.topologySpreadConstraints=null", "--set", "image.speaker.tag=dev",
		"--set", "metrics.dashboard.enabled=true", "--set", "speaker.extraArgs={--memberlist-timing=large}"},
}

func helmTemplate(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, tool(t, "helm"), append([]string{"template", "herald", "charts/herald", "--namespace", "herald-system"}, args...)...)
}

func decode(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

func byName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	return m
}

func TestHelmLint(t *testing.T) {
	helm := tool(t, "helm")
	all := []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.podMonitor.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.dashboard.enabled=true"}
	for _, vs := range append(valueSets, all) {
		run(t, helm, append([]string{"lint", "--strict", "charts/herald"}, vs...)...)
	}
}

// TestDefaultsRenderThePlainManifests: the chart with its default values
// holds exactly the objects of manifests/herald.yaml but the Namespace
// (which Helm users create with the release).
func TestDefaultsRenderThePlainManifests(t *testing.T) {
	chart := byName(decode(t, helmTemplate(t, "--include-crds")))
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "manifests", "herald.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plain := byName(decode(t, string(data)))
	if _, ok := plain["Namespace//herald-system"]; !ok {
		t.Error("manifests/herald.yaml does not create the namespace")
	}
	delete(plain, "Namespace//herald-system")
	var names []string
	for n := range plain {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !reflect.DeepEqual(plain[n].Object, chart[n].Object) {
			t.Errorf("%s differs between manifests/herald.yaml and the chart's defaults", n)
		}
		delete(chart, n)
	}
	for n := range chart {
		t.Errorf("the chart renders %s, which manifests/herald.yaml lacks", n)
	}
	for _, want := range []string{"Deployment/herald-system/herald-controller", "DaemonSet/herald-system/herald-speaker",
		"PodDisruptionBudget/herald-system/herald-controller", "Service/herald-system/herald-speaker-metrics",
		"CustomResourceDefinition//ipaddresspools.herald.dev"} {
		if _, ok := plain[want]; !ok && !t.Failed() {
			t.Errorf("the default install lacks %s", want)
		}
	}
}

// TestValuesReachTheObjects: the values the chart documents change what it
// renders (a sample of them, the ones whose wiring matters).
func TestValuesReachTheObjects(t *testing.T) {
	objs := byName(decode(t, helmTemplate(t, valueSets[1]...)))
	ds := objs["DaemonSet/herald-system/herald-speaker"]
	dep := objs["Deployment/herald-system/herald-controller"]
	if ds == nil || dep == nil {
		t.Fatal("no speaker DaemonSet or controller Deployment")
	}
	vols, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	secret, _, _ := unstructured.NestedString(vols[0].(map[string]any), "secret", "secretName")
	if secret != "other-key" {
		t.Errorf("speaker mounts Secret %q, want other-key (memberlistSecret)", secret)
	}
	args := func(o *unstructured.Unstructured) string {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		a, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		return strings.Join(a, " ")
	}
	for _, want := range []string{"--memberlist-secret=other-key", "--ignore-exclude-lb", "--lb-class-only", "--lb-class=example.com/lb", "--installation=blue"} {
		if !strings.Contains(args(dep), want) {
			t.Errorf("controller args %q lack %s", args(dep), want)
		}
	}
	for _, want := range []string{"--memberlist-secret=other-key", "--ignore-exclude-lb", "--lb-class-only", "--lb-class=example.com/lb", "--installation=blue",
		"--bgp-listen-port=1179", "--bgp-listen-addresses=127.0.0.1,::1"} {
		if !strings.Contains(args(ds), want) {
			t.Errorf("speaker args %q lack %s", args(ds), want)
		}
	}
	caps := func(o *unstructured.Unstructured) []string {
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		a, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "securityContext", "capabilities", "add")
		return a
	}
	if c := caps(ds); len(c) != 1 || c[0] != "NET_RAW" {
		t.Errorf("speaker by default: capabilities %v, want NET_RAW only", c)
	}
	withBind := byName(decode(t, helmTemplate(t, "--set", "speaker.bgpListen.netBindService=true")))
	if c := caps(withBind["DaemonSet/herald-system/herald-speaker"]); strings.Join(c, ",") != "NET_RAW,NET_BIND_SERVICE" {
		t.Errorf("speaker.bgpListen.netBindService=true: capabilities %v, want NET_RAW and NET_BIND_SERVICE", c)
	}
	if _, ok := objs["PodDisruptionBudget/herald-system/herald-controller"]; ok {
		t.Error("podDisruptionBudget.enabled=false still renders the PDB")
	}
	if _, ok := objs["Service/herald-system/herald-speaker-metrics"]; ok {
		t.Error("metrics.services=false still renders the metrics Services")
	}
	req, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	if len(req) != 1 {
		t.Errorf("podAntiAffinity=hard: required terms %v", req)
	}
	if pc, _, _ := unstructured.NestedString(ds.Object, "spec", "template", "spec", "priorityClassName"); pc != "" {
		t.Errorf("speaker.priorityClassName= left %q", pc)
	}
	def := byName(decode(t, helmTemplate(t)))
	for name, want := range map[string]string{"DaemonSet/herald-system/herald-speaker": "system-node-critical", "Deployment/herald-system/herald-controller": "system-cluster-critical"} {
		spec := def[name].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		if spec["priorityClassName"] != want {
			t.Errorf("%s priorityClassName %v, want %s", name, spec["priorityClassName"], want)
		}
		if sel, _ := spec["nodeSelector"].(map[string]any); sel["kubernetes.io/os"] != "linux" {
			t.Errorf("%s nodeSelector %v, want kubernetes.io/os: linux", name, spec["nodeSelector"])
		}
	}
}

// TestTemplateAppliesToARealAPIServer renders the chart with each values
// set and applies every object with a server-side dry run to a real
// kube-apiserver, so schema, defaulting and validation all run. The
// Prometheus Operator objects are left out: the test server has no
// operator CRDs (promtool and helm lint check those).
func TestTemplateAppliesToARealAPIServer(t *testing.T) {
	cp := testenv.Shared(t)
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "herald-system"}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for i, vs := range valueSets {
		applied := 0
		for _, o := range decode(t, helmTemplate(t, append([]string{"--include-crds"}, vs...)...)) {
			if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
				continue
			}
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				t.Fatalf("values set %d: %s: %v", i, o.GetKind(), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if o.GetNamespace() != "" {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			data, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			force := true
			_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, bytes.Clone(data),
				metav1.PatchOptions{FieldManager: "helm-test", DryRun: []string{metav1.DryRunAll}, Force: &force})
			if err != nil {
				t.Errorf("values set %d: server-side dry run of %s %s/%s: %v", i, o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
			applied++
		}
		if applied < 15 {
			t.Errorf("values set %d: only %d objects applied", i, applied)
		}
		t.Logf("values set %d: %d objects accepted", i, applied)
	}
}

// TestSpeakerLiveness: the default install keeps what the speakers'
// liveness needs: their Role may read and renew Leases
// (herald-speaker-<node>) and watch the announcement hold, the DaemonSet waits minReadySeconds before
// moving on, and /readyz is probed every 2 s.
func TestSpeakerLiveness(t *testing.T) {
	objs := byName(decode(t, helmTemplate(t)))
	role := objs["Role/herald-system/herald-speaker"]
	if role == nil {
		t.Fatal("no speaker Role")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	leases := false
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		if slices.Equal(groups, []string{"coordination.k8s.io"}) && slices.Equal(res, []string{"leases"}) &&
			slices.Equal(verbs, []string{"get", "list", "watch", "create", "update", "delete"}) {
			leases = true
		}
	}
	if !leases {
		t.Errorf("speaker Role rules %v: no get, list, watch, create, update, delete on coordination.k8s.io leases", rules)
	}
	ds := objs["DaemonSet/herald-system/herald-speaker"]
	if ds == nil {
		t.Fatal("no speaker DaemonSet")
	}
	if m := number(ds.Object, "spec", "minReadySeconds"); m != 10 {
		t.Errorf("speaker minReadySeconds %v, want 10", m)
	}
	cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if p := number(cs[0].(map[string]any), "readinessProbe", "periodSeconds"); p != 2 {
		t.Errorf("speaker readinessProbe periodSeconds %v, want 2", p)
	}
	withValue := byName(decode(t, helmTemplate(t, "--set", "speaker.minReadySeconds=30")))
	if m := number(withValue["DaemonSet/herald-system/herald-speaker"].Object, "spec", "minReadySeconds"); m != 30 {
		t.Errorf("speaker.minReadySeconds=30: minReadySeconds %v", m)
	}
}

// number reads a number of a decoded object (JSON numbers decode as
// float64); -1 when absent or not a number.
func number(obj map[string]any, fields ...string) float64 {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok {
		return -1
	}
	switch n := v.(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	}
	return -1
}
