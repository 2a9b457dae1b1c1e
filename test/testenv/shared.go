package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// env is the package-wide control plane started by Main. It is the only
// package-level state here, and it exists because TestMain runs once per
// test binary.
type env struct {
	cp  *ControlPlane
	err error
}

// Main runs a test package's tests against one control plane with the
// Herald CRDs installed, started before the first test and stopped after
// the last. Use it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// When the control plane cannot start, every test that asks for it fails
// with the reason.
func Main(m *testing.M) {
	os.Exit(run(m))
}

var shared env

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cp, err := Start(ctx, Options{})
	if err == nil {
		err = installRepoCRDs(ctx, cp)
	}
	if err != nil {
		shared.err = fmt.Errorf("test control plane: %w", err)
	} else {
		fmt.Fprintf(os.Stderr, "testenv: kube-apiserver ready at %s in %s (logs in %s)\n", cp.URL, time.Since(start).Round(time.Millisecond), cp.Dir)
	}
	shared.cp = cp
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	return code
}

func installRepoCRDs(ctx context.Context, cp *ControlPlane) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	return InstallCRDs(ctx, cp.AdminConfig, filepath.Join(root, "manifests", "crds"))
}

// Shared returns the control plane Main started, failing the test if it
// could not start.
func Shared(t testing.TB) *ControlPlane {
	t.Helper()
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if shared.cp == nil {
		t.Fatal("testenv.Shared called without testenv.Main in TestMain")
	}
	return shared.cp
}
