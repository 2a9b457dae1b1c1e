package migrate

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes the objects as one YAML stream, without the fields a
// fresh object must not carry (status, creationTimestamp).
func WriteYAML(w io.Writer, objs []runtime.Object) error {
	var b strings.Builder
	for _, o := range objs {
		m, err := Unstructured(o)
		if err != nil {
			return err
		}
		out, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Unstructured is the object as it is applied: no status, no
// creationTimestamp.
func Unstructured(o runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", o, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	return m, nil
}
