package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/herald-lb/herald/internal/testenv"
)

// buildFlags are those of the Makefile's GOBUILDFLAGS, so that the lab runs
// the binaries users get (stripped, without grpc's x/net/trace).
var buildFlags = []string{"-trimpath", "-tags=grpcnotrace", "-ldflags=-s -w"}

// Binaries builds the controller and speaker once per process, into
// $HERALD_CACHE/e2e-bin (overwritten by the next build).
type Binaries struct {
	once       sync.Once
	err        error
	Dir        string
	Controller string
	Speaker    string
}

// Build compiles both binaries (cached by Go's build cache).
func (b *Binaries) Build() error {
	b.once.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		cache, err := testenv.CacheDir()
		if err != nil {
			b.err = err
			return
		}
		dir := filepath.Join(cache, "e2e-bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.err = err
			return
		}
		b.Dir = dir
		for _, c := range []string{"controller", "speaker"} {
			args := append(append([]string{"build"}, buildFlags...), "-o", filepath.Join(dir, c), "./"+c)
			cmd := exec.Command("go", args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.err = fmt.Errorf("go build ./%s: %v\n%s", c, err, out)
				return
			}
		}
		b.Controller, b.Speaker = filepath.Join(dir, "controller"), filepath.Join(dir, "speaker")
	})
	return b.err
}
