package deploy

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/herald-lb/herald/internal/testenv"
)

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
			if err := testenv.GoBuild(context.Background(), filepath.Join(dir, c), "./"+c); err != nil {
				b.err = err
				return
			}
		}
		b.Controller, b.Speaker = filepath.Join(dir, "controller"), filepath.Join(dir, "speaker")
	})
	return b.err
}
