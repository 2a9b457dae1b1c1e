// Package install checks what an operator applies: every manifest applies
// to a real API server with kubectl (server-side), the kustomization and
// the rendered herald.yaml hold the same objects, the RBAC grants what the
// design needs and nothing it does not, and the workloads carry the
// security settings the design asks for.
package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := testenv.Binary("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, append([]string{"--kubeconfig", testenv.Shared(t).AdminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func manifests(t *testing.T, parts ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root, "manifests"}, parts...)...)
}

// TestManifestsApply applies the whole install for real with server-side
// apply (the namespace must exist before namespaced objects can be
// dry-run), then dry-runs it again and the kustomization, and dry-runs the
// samples.
func TestManifestsApply(t *testing.T) {
	out := kubectl(t, "apply", "--server-side", "-f", manifests(t, "herald.yaml"))
	for _, want := range []string{"namespace/herald-system", "deployment.apps/herald-controller", "daemonset.apps/herald-speaker",
		"clusterrole.rbac.authorization.k8s.io/herald-controller", "customresourcedefinition.apiextensions.k8s.io/ipaddresspools.herald.dev"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %s:\n%s", want, out)
		}
	}
	kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", manifests(t, "herald.yaml"))
	kubectl(t, "apply", "--server-side", "--dry-run=server", "-k", manifests(t))
	entries, err := os.ReadDir(manifests(t, "samples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", manifests(t, "samples", e.Name()))
	}
}

// TestKustomizationMatchesRenderedFile: `kubectl apply -k manifests/` and
// `kubectl apply -f manifests/herald.yaml` install the same objects, each
// with the same contents, field by field.
func TestKustomizationMatchesRenderedFile(t *testing.T) {
	kustomized := objectsByName(t, kubectl(t, "kustomize", manifests(t)))
	data, err := os.ReadFile(manifests(t, "herald.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rendered := objectsByName(t, string(data))
	if len(rendered) == 0 {
		t.Fatal("herald.yaml holds no objects")
	}
	for _, name := range sortedKeys(kustomized, rendered) {
		k, inK := kustomized[name]
		r, inR := rendered[name]
		switch {
		case !inR:
			t.Errorf("%s: in the kustomization, not in herald.yaml", name)
		case !inK:
			t.Errorf("%s: in herald.yaml, not in the kustomization", name)
		default:
			if diffs := differences(k.Object, r.Object, ""); len(diffs) > 0 {
				t.Errorf("%s differs (kustomization, herald.yaml):\n%s", name, strings.Join(diffs, "\n"))
			}
		}
	}
}
