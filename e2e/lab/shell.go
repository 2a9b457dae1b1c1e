package lab

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// run runs a command to completion and returns its standard output; the
// error carries the command line and its standard error.
func run(ctx context.Context, argv ...string) (string, error) {
	return runInput(ctx, "", argv...)
}

func runInput(ctx context.Context, stdin string, argv ...string) (string, error) {
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

// inNS prefixes argv with `ip netns exec ns` (nothing for the root namespace).
func inNS(ns string, argv ...string) []string {
	if ns == "" {
		return argv
	}
	return append([]string{"ip", "netns", "exec", ns}, argv...)
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
