package labkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Daemon is a started router daemon, as the caller's process type sees
// it (a *Proc, or e2e/lab's *Process).
type Daemon interface {
	Exited() bool
	Err() error
	Tail(lines int) string
}

// Spawner starts argv in the router's namespace as the process named name
// (its PID recorded and stopped the caller's way).
type Spawner func(name string, argv []string) (Daemon, error)

// Output runs a command to completion and returns its standard output;
// the error carries the command line and its standard error.
func Output(ctx context.Context, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
