package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// controllerOnly are packages only the controller needs: the speaker
// binary must not link them (the allocator is the controller's address
// book; what a Service requests lives in internal/service, which both
// read).
var controllerOnly = []string{
	"github.com/herald-lb/herald/internal/allocator",
	"github.com/herald-lb/herald/internal/controller",
}

// TestSpeakerLinksNoControllerPackage fails when an import chain puts a
// controller-only package into the speaker binary again.
func TestSpeakerLinksNoControllerPackage(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the speaker's dependencies")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/herald-lb/herald/internal/speaker") {
		t.Fatalf("go list -deps does not list internal/speaker; the listing is not the speaker's: %v", deps)
	}
	for _, pkg := range controllerOnly {
		if slices.Contains(deps, pkg) {
			t.Errorf("the speaker links %s (find the chain with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./speaker)", pkg)
		}
	}
}
