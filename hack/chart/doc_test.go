// Package chart tests what an operator installs and watches: the Helm
// chart (helm lint; helm template equal to manifests/herald.yaml; the
// rendering applied with a server-side dry run to a real kube-apiserver),
// the alerts (promtool test rules, one case that fires per alert) and the
// Grafana dashboard (every query parses, every metric it or the alerts
// name is one the code exports). helm and promtool come from
// hack/build-tools.sh.
package chart

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-lb/herald/internal/testenv"
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
// hack/build-tools.sh when missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	root := repoRoot(t)
	key := map[string]string{"helm": "HELM_VERSION", "promtool": "PROMETHEUS_VERSION"}[name]
	f, err := os.Open(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	version := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), key+"="); ok {
			version = v
		}
	}
	if version == "" {
		t.Fatalf("hack/versions.env has no %s", key)
	}
	cache, err := testenv.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cache, "bin", name+"-"+version)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cmd := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), name)
	cmd.Env = append(os.Environ(), "HERALD_CACHE="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
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
