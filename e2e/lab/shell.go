package lab

import (
	"context"
	"os"
	"strings"

	"github.com/herald-lb/herald/test/labkit"
)

// run runs a command to completion and returns its standard output; the
// error carries the command line and its standard error.
func run(ctx context.Context, argv ...string) (string, error) {
	return labkit.Output(ctx, argv...)
}

// runInput is run with stdin as the command's standard input.
func runInput(ctx context.Context, stdin string, argv ...string) (string, error) {
	return labkit.OutputWithInput(ctx, stdin, argv...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ipBatch runs `ip [-n ns] -batch -` with one command a line; -force keeps
// going past a failing line only when asked to.
func ipBatch(ctx context.Context, ns string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	argv := []string{"ip"}
	if ns != "" {
		argv = append(argv, "-n", ns)
	}
	argv = append(argv, "-batch", "-")
	_, err := runInput(ctx, strings.Join(lines, "\n")+"\n", argv...)
	return err
}
