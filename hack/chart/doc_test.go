// Package chart tests what an operator installs and watches: the Helm
// chart (helm lint; helm template equal to manifests/herald.yaml; the
// rendering applied with a server-side dry run to a real kube-apiserver),
// the alerts (promtool test rules, one case that fires per alert) and the
// Grafana dashboard (every query parses, every metric it or the alerts
// name is one the code exports). helm and promtool come from
// hack/build-programs.sh.
package chart

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tool returns the cached helm or promtool, building it with
// hack/build-programs.sh when missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := testenv.Tool(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs a command in the repository root and returns its stdout.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
