package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildFlags are how Herald's binaries are built (the Makefile's
// GOBUILDFLAGS and the Dockerfile say the same): stripped, and without
// grpc's x/net/trace, whose html/template turns off the linker's dead-code
// elimination (docs/design.md).
var BuildFlags = []string{"-trimpath", "-tags=grpcnotrace", "-ldflags=-s -w"}

// GoBuild builds pkgs (paths relative to the module root, or import paths)
// as static binaries with BuildFlags into out: a file for one package, a
// directory ending in a path separator for several.
func GoBuild(ctx context.Context, out string, pkgs ...string) error {
	return GoBuildFor(ctx, "", out, pkgs...)
}

// GoBuildFor is GoBuild for another architecture (GOARCH; GOOS linux),
// the way `make images` cross-builds; an empty goarch is the host's.
func GoBuildFor(ctx context.Context, goarch, out string, pkgs ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	goBin, err := GoCommand()
	if err != nil {
		return err
	}
	args := append(append([]string{"build"}, BuildFlags...), "-o", out)
	cmd := exec.CommandContext(ctx, goBin, append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOOS=linux", "GOARCH="+goarch)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (%s): %w\n%s", strings.Join(pkgs, " "), archName(goarch), err, msg)
	}
	return nil
}

// GoCommand finds the go command: PATH, $GOROOT/bin, /usr/local/go/bin
// (sudo may leave go out of PATH).
func GoCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	var tried []string
	for _, dir := range []string{os.Getenv("GOROOT"), "/usr/local/go"} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("no go command in PATH (tried also %s)", strings.Join(tried, ", "))
}

func archName(goarch string) string {
	if goarch == "" {
		return "host"
	}
	return "linux/" + goarch
}
