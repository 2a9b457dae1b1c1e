package labkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Spawner starts argv in the router's namespace as the process named name
// (its PID recorded and stopped the caller's way).
type Spawner func(name string, argv []string) (*Process, error)

// Router is what FRR and BIRD offer alike.
type Router interface {
	// Start writes conf as the router's configuration, starts its
	// daemons with spawn and waits until they answer.
	Start(ctx context.Context, conf string, spawn Spawner) ([]*Process, error)
	// CLI runs one command of the router's command line.
	CLI(ctx context.Context, command string) (string, error)
	// ShellHint is how a human reaches the router's command line.
	ShellHint() string
}

var (
	_ Router = FRR{}
	_ Router = BIRD{}
)

// Output runs a command to completion and returns its standard output;
// the error carries the command line and its standard error.
func Output(ctx context.Context, argv ...string) (string, error) {
	return OutputWithInput(ctx, "", argv...)
}

// OutputWithInput is Output with stdin as the command's standard input.
func OutputWithInput(ctx context.Context, stdin string, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
