package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.env")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# comment\n\nGOFLAGS=\"-a -b\"\n  CGO_ENABLED=0\nEMPTY=\n")
	got, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GOFLAGS=-a -b", "CGO_ENABLED=0", "EMPTY="}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"export X=1\n", "no assignment\n", "=1\n"} {
		write(bad)
		if _, err := readEnvFile(path); err == nil || !strings.Contains(err.Error(), "build.env:1") {
			t.Errorf("%q: error %v, want one naming build.env:1", bad, err)
		}
	}
}

// TestBuildFlagsShareTheTestsCache: the binaries the tests build
// (BuildFlags) must compile their packages the way the tests themselves
// are compiled (GOFLAGS of hack/build.env), or a fresh machine compiles
// every dependency twice.
func TestBuildFlagsShareTheTestsCache(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env, err := readEnvFile(filepath.Join(root, "hack", "build.env"))
	if err != nil {
		t.Fatal(err)
	}
	var goflags []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			goflags = strings.Fields(v)
		}
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("hack/build.env: %q has no CGO_ENABLED=0 (Herald's binaries are static)", env)
	}
	for _, f := range BuildFlags {
		if strings.HasPrefix(f, "-ldflags") {
			continue // the linker's flags change no compiled package
		}
		if !slices.Contains(goflags, f) {
			t.Errorf("BuildFlags has %s, hack/build.env's GOFLAGS %q has not", f, goflags)
		}
	}
}
