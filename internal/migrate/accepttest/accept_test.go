// Package accepttest applies every object the MetalLB converter writes
// for its example configurations to a real API server with Herald's CRDs
// (server-side dry run): the schema and its CEL rules must accept them.
package accepttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/herald-lb/herald/internal/migrate"
	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func resourceOf(kind string) string {
	switch kind {
	case "IPAddressPool":
		return "ipaddresspools"
	case "L2Advertisement":
		return "l2advertisements"
	case "BGPAdvertisement":
		return "bgpadvertisements"
	case "BGPPeer":
		return "bgppeers"
	case "Community":
		return "communities"
	case "BFDProfile":
		return "bfdprofiles"
	}
	return ""
}

func TestConvertedObjectsAccepted(t *testing.T) {
	cp := testenv.Shared(t)
	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig)
	inputs, err := filepath.Glob(filepath.Join("..", "testdata", "convert", "*.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no example configurations: %v", err)
	}
	applied := 0
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var src migrate.Source
			if err := src.AddYAML(in, data); err != nil {
				t.Fatal(err)
			}
			res := migrate.Convert(&src, migrate.Options{})
			if len(res.Objects) == 0 {
				t.Fatal("the example converts to nothing")
			}
			for _, o := range res.Objects {
				m, err := migrate.Unstructured(o)
				if err != nil {
					t.Fatal(err)
				}
				u := &unstructured.Unstructured{Object: m}
				gvr := schema.GroupVersionResource{Group: "herald.dev", Version: "v1beta1", Resource: resourceOf(u.GetKind())}
				_, err = dyn.Resource(gvr).Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
				if err != nil {
					t.Errorf("%s %s refused: %v", u.GetKind(), u.GetName(), err)
					continue
				}
				applied++
			}
		})
	}
	t.Logf("%d converted objects accepted by the API server", applied)

	// The control: what the converter rewrites (a CIDR with host bits) is
	// refused as MetalLB wrote it, so acceptance above means something.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "herald.dev/v1beta1", "kind": "IPAddressPool",
		"metadata": map[string]any{"name": "host-bits"}, "spec": map[string]any{"addresses": []any{"198.51.100.37/28"}}}}
	gvr := schema.GroupVersionResource{Group: "herald.dev", Version: "v1beta1", Resource: "ipaddresspools"}
	if _, err := dyn.Resource(gvr).Create(context.Background(), bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
		t.Error("the API server accepted a CIDR with host bits; the acceptance check proves nothing")
	}
}
