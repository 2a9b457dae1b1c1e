package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Versions are the pinned versions of the control-plane binaries.
type Versions struct {
	Kubernetes string
	Etcd       string
	// Helm and Prometheus (promtool and prometheus) are the tools
	// hack/build-programs.sh builds; empty when versions.env does not
	// name them.
	Helm, Prometheus string
	// PrometheusOperator is the version of the Prometheus Operator's
	// CRDs (hack/prometheus-operator-crds.sh).
	PrometheusOperator string
}

// RepoRoot finds the module root (the directory holding go.mod) from the
// working directory up.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "versions.env")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: hack/versions.env not found above the working directory")
		}
		dir = parent
	}
}

// ReadVersions parses hack/versions.env.
func ReadVersions(root string) (Versions, error) {
	env, err := readEnvFile(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		return Versions{}, err
	}
	var v Versions
	for _, kv := range env {
		key, val, _ := strings.Cut(kv, "=")
		switch key {
		case "KUBERNETES_VERSION":
			v.Kubernetes = val
		case "ETCD_VERSION":
			v.Etcd = val
		case "HELM_VERSION":
			v.Helm = val
		case "PROMETHEUS_VERSION":
			v.Prometheus = val
		case "PROMETHEUS_OPERATOR_VERSION":
			v.PrometheusOperator = val
		}
	}
	if v.Kubernetes == "" || v.Etcd == "" {
		return v, fmt.Errorf("hack/versions.env: KUBERNETES_VERSION and ETCD_VERSION must be set")
	}
	return v, nil
}

// CacheDir is where the binaries live: $HERALD_CACHE, else
// $XDG_CACHE_HOME/herald, else ~/.cache/herald (as the build script).
func CacheDir() (string, error) {
	if d := os.Getenv("HERALD_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "herald"), nil
}

// Binary returns the path of a cached control-plane binary (etcd,
// kube-apiserver, kube-proxy), building it first with
// hack/build-programs.sh when it is missing.
func Binary(name string) (string, error) { return program(name) }

// Tool returns the path of helm, promtool or prometheus at the version in
// hack/versions.env, building it with hack/build-programs.sh when it is not
// in the cache yet (a cold build takes minutes).
func Tool(name string) (string, error) { return program(name) }

// program returns $HERALD_CACHE/bin/<name>-<version> for a program
// hack/build-programs.sh builds, at its version in hack/versions.env,
// running the script first when the binary is missing (it waits for a
// build already under way).
func program(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	v, err := ReadVersions(root)
	if err != nil {
		return "", err
	}
	version := v.programVersion(name)
	if version == "" {
		return "", fmt.Errorf("testenv: hack/versions.env names no version of %s", name)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "bin", name+"-"+version)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	fmt.Fprintf(os.Stderr, "testenv: %s %s is not built yet; building it (a cold build takes minutes)\n", name, version)
	cmd := exec.Command(filepath.Join(root, "hack", "build-programs.sh"), name)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "HERALD_CACHE="+cache)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s %s: %w", name, version, err)
	}
	return path, nil
}

// programVersion is the version in hack/versions.env of a program
// hack/build-programs.sh builds: etcd and helm their own, promtool and
// prometheus Prometheus', every Kubernetes component Kubernetes'.
func (v Versions) programVersion(name string) string {
	switch name {
	case "etcd":
		return v.Etcd
	case "helm":
		return v.Helm
	case "promtool", "prometheus":
		return v.Prometheus
	}
	return v.Kubernetes
}

// PrometheusOperatorCRDs returns the directory holding the Prometheus
// Operator's CRDs (monitoring.coreos.com_servicemonitors.yaml and the
// rest) at the version in hack/versions.env, generating them with
// hack/prometheus-operator-crds.sh the first time.
func PrometheusOperatorCRDs() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "prometheus-operator-crds.sh"))
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "HERALD_CACHE="+cache)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("generating the Prometheus Operator's CRDs: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
