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
	args := append(append([]string{"build"}, BuildFlags...), "-o", out)
	cmd, err := GoCmd(ctx, append(args, pkgs...)...)
	if err != nil {
		return err
	}
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOOS=linux", "GOARCH="+goarch)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (%s): %w\n%s", strings.Join(pkgs, " "), archName(goarch), err, msg)
	}
	return nil
}

// GoInstall installs pkgs (main packages of the module) for this machine
// with BuildFlags into dir (GOBIN). Unlike go build, go install does not
// link a binary again when the one in dir is up to date, which saves the
// test processes that need the same binaries their link.
func GoInstall(ctx context.Context, dir string, pkgs ...string) error {
	cmd, err := GoCmd(ctx, append(append([]string{"install"}, BuildFlags...), pkgs...)...)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, "GOBIN="+dir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go install %s: %w\n%s", strings.Join(pkgs, " "), err, msg)
	}
	return nil
}

// GoCmd is a go command of the project: run in the module's root with
// GoEnv's environment (callers may append to cmd.Env).
func GoCmd(ctx context.Context, args ...string) (*exec.Cmd, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	goBin, err := GoCommand()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = root
	if cmd.Env, err = GoEnv(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// GoEnv is the environment for a go command of the project: this
// process's, with GOFLAGS, CGO_ENABLED and GOWORK from hack/build.env,
// which the Makefile and the scripts read too (a test that runs go with
// other flags compiles every dependency again).
func GoEnv() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	build, err := readEnvFile(filepath.Join(root, "hack", "build.env"))
	if err != nil {
		return nil, err
	}
	return append(os.Environ(), build...), nil
}

// readEnvFile parses a file of shell assignments (hack/build.env,
// hack/versions.env) into KEY=value pairs: one per line, the value
// optionally in double quotes; comments and blank lines skipped.
func readEnvFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var env []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%s:%d: not a KEY=value assignment: %q", path, i+1, line)
		}
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		env = append(env, key+"="+val)
	}
	return env, nil
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
