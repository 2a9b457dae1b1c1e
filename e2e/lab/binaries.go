package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/herald-lb/herald/test/testenv"
)

// binaries are the lab's own helpers, built from this repository into the
// run directory.
type binaries struct {
	podserver, labprobe, pause string
}

// buildBinaries builds e2e/cmd/podserver, e2e/cmd/pause and e2e/cmd/labprobe with one
// `go build` (the Go build cache makes it a link on later runs).
func (l *Lab) buildBinaries(ctx context.Context) error {
	start := time.Now()
	out := filepath.Join(l.dir, "bin")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := testenv.GoBuild(ctx, out+string(filepath.Separator), "./e2e/cmd/podserver", "./e2e/cmd/labprobe", "./e2e/cmd/pause"); err != nil {
		return fmt.Errorf("building the lab's helpers: %w", err)
	}
	l.bin = binaries{podserver: filepath.Join(out, "podserver"), labprobe: filepath.Join(out, "labprobe"), pause: filepath.Join(out, "pause")}
	l.addTiming("helpers built", start)
	return nil
}
