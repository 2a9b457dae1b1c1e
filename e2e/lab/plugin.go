package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/herald-lb/herald/test/testenv"
)

// KubectlHeraldBinary builds Herald's kubectl plugin (./kubectl-herald)
// into the run directory beside the lab's helpers, once per lab run, and
// returns its path. Tests call it before they start a clock, so that a
// link is never timed.
func (l *Lab) KubectlHeraldBinary(ctx context.Context) (string, error) {
	path := filepath.Join(l.dir, "bin", "kubectl-herald")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	start := time.Now()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := testenv.GoBuild(ctx, path, "./kubectl-herald"); err != nil {
		return "", fmt.Errorf("building kubectl-herald: %w", err)
	}
	l.addTiming("kubectl-herald built", start)
	return path, nil
}

// PluginRun is one run of kubectl-herald: what it printed and how it
// ended.
type PluginRun struct {
	Stdout, Stderr string
	// Code is the exit code (-1 when it did not run or was killed).
	Code int
	// Ended is when the process exited.
	Ended time.Time
}

// KubectlHerald runs `kubectl herald <command> --kubeconfig <admin>
// args...` as the lab's admin, the way an operator runs the plugin. err
// is set only when it could not run; a non-zero exit is in Code.
func (l *Lab) KubectlHerald(ctx context.Context, command string, args ...string) (PluginRun, error) {
	r := PluginRun{Code: -1}
	bin, err := l.KubectlHeraldBinary(ctx)
	if err != nil {
		return r, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{command, "--kubeconfig", l.adminKubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r.Ended, r.Stdout, r.Stderr = time.Now(), stdout.String(), stderr.String()
	var exit *exec.ExitError
	switch {
	case err == nil:
		r.Code = 0
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	default:
		return r, fmt.Errorf("kubectl herald %s %s: %w", command, strings.Join(args, " "), err)
	}
	return r, nil
}
