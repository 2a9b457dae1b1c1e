package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// binaries are the lab's own helpers, built from this repository into the
// run directory.
type binaries struct {
	podserver, labprobe string
}

// buildBinaries builds e2e/cmd/podserver and e2e/cmd/labprobe with one
// `go build` (the Go build cache makes it a link on later runs).
func (l *Lab) buildBinaries(ctx context.Context) error {
	start := time.Now()
	out := filepath.Join(l.dir, "bin")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	goBin, err := findGo()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out+string(filepath.Separator),
		"./e2e/cmd/podserver", "./e2e/cmd/labprobe")
	cmd.Dir = l.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the lab's helpers (go build ./e2e/cmd/podserver ./e2e/cmd/labprobe): %w\n%s", err, msg)
	}
	l.bin = binaries{podserver: filepath.Join(out, "podserver"), labprobe: filepath.Join(out, "labprobe")}
	l.addTiming("helpers built", start)
	return nil
}

// findGo finds the go command: PATH, $GOROOT/bin, /usr/local/go/bin.
func findGo() (string, error) {
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
	return "", fmt.Errorf("no go command in PATH (tried also %s): the lab builds its helpers with go", strings.Join(tried, ", "))
}
