package install

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// objects decodes a multi-document YAML stream.
func objects(t *testing.T, yaml string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(yaml)), 4096)
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

// objectsByName decodes a multi-document YAML stream into its objects by
// kind/namespace/name, failing on a name given twice.
func objectsByName(t *testing.T, yaml string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objects(t, yaml) {
		name := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if _, dup := out[name]; dup {
			t.Fatalf("%s is in the stream twice", name)
		}
		out[name] = o
	}
	return out
}

// sortedKeys is the union of the maps' keys, sorted.
func sortedKeys[V any](maps ...map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// maxDifferences bounds what differences reports for one object.
const maxDifferences = 20

// differences lists the paths where two decoded YAML values differ, with
// both values, at most maxDifferences of them.
func differences(a, b any, path string) []string {
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	if aMap && bMap {
		var out []string
		for _, k := range sortedKeys(am, bm) {
			out = append(out, differences(am[k], bm[k], path+"."+k)...)
			if len(out) >= maxDifferences {
				return out[:maxDifferences]
			}
		}
		return out
	}
	as, aList := a.([]any)
	bs, bList := b.([]any)
	if aList && bList && len(as) == len(bs) {
		var out []string
		for i := range as {
			out = append(out, differences(as[i], bs[i], fmt.Sprintf("%s[%d]", path, i))...)
			if len(out) >= maxDifferences {
				return out[:maxDifferences]
			}
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("  %s: %s != %s", path, brief(a), brief(b))}
}

// brief is a value for a difference line, cut at 120 characters.
func brief(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// TestDifferences: a changed, an added and a removed field are each
// reported with their path; equal values give nothing.
func TestDifferences(t *testing.T) {
	a := map[string]any{"spec": map[string]any{"replicas": int64(1), "args": []any{"--a", "--b"}, "gone": "x"}}
	b := map[string]any{"spec": map[string]any{"replicas": int64(2), "args": []any{"--a", "--c"}, "new": "y"}}
	got := differences(a, b, "")
	want := []string{
		`  .spec.args[1]: "--b" != "--c"`,
		`  .spec.gone: "x" != <nil>`,
		`  .spec.new: <nil> != "y"`,
		`  .spec.replicas: 1 != 2`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := differences(a, a, ""); len(d) != 0 {
		t.Errorf("differences of a value with itself: %v", d)
	}
}
