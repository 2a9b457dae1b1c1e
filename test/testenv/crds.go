package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates (or updates) every CRD in dir and waits until each is
// Established and its kind is served.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s", dir)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := dc.Resource(crdResource)
	var names []string
	for _, f := range files {
		obj, err := readObject(f)
		if err != nil {
			return err
		}
		names = append(names, obj.GetName())
		if err := createOrReplace(ctx, crds, obj); err != nil {
			return fmt.Errorf("CRD %s: %w", f, err)
		}
	}
	for _, n := range names {
		if err := waitEstablished(ctx, crds, n); err != nil {
			return err
		}
	}
	return nil
}

func readObject(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func createOrReplace(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func waitEstablished(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		crd, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err == nil && crdCondition(crd, "Established") && crdCondition(crd, "NamesAccepted") {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("CRD %s not established after 60s", name)
}

func crdCondition(crd *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && strings.EqualFold(fmt.Sprint(m["status"]), "True") {
			return true
		}
	}
	return false
}
