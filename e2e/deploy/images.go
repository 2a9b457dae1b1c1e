package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/herald-lb/herald/internal/testenv"
)

// Images are Herald's images built from this checkout as `make images`
// builds them (static binaries, then hack/images: OCI image layouts holding
// an image index), but for this machine's architecture only, once per test
// process, into $HERALD_CACHE/e2e-images. The lab's nodes import
// them with `ctr images import`, which takes this machine's platform from
// the index.
type Images struct {
	once sync.Once
	err  error
	// Dir holds the tarballs; Tarballs maps component to its tarball and
	// Digests to the config digest of its image for this machine's
	// architecture (what the pods must run).
	Dir      string
	Tarballs map[string]string
	Digests  map[string]string
	// Refs are the image references the manifests name.
	Refs map[string]string
}

// Components are Herald's images.
var Components = []string{"controller", "speaker"}

// Build builds the binaries and the images.
func (im *Images) Build() error {
	im.once.Do(func() { im.err = im.build() })
	return im.err
}

func (im *Images) build() error {
	cache, err := testenv.CacheDir()
	if err != nil {
		return err
	}
	// Test processes side by side (make e2e's lines) build into the same
	// directory: one at a time.
	unlock, err := lockFile(filepath.Join(cache, "e2e-images.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	// Only this machine's architecture, the one the nodes import: `make
	// images` also cross-builds arm64, but on a fresh machine that is a
	// second compile of every dependency (minutes on 2 cores) for an image
	// no node runs. The multi-architecture index itself is tested by
	// hack/images and TestImagesOutputAndDigest (the pause image, both
	// architectures).
	arches := []string{runtime.GOARCH}
	if !slices.Contains([]string{"amd64", "arm64"}, runtime.GOARCH) {
		return fmt.Errorf("images: this machine's architecture %s is not one make images builds (amd64, arm64)", runtime.GOARCH)
	}
	im.Dir = filepath.Join(cache, "e2e-images")
	static := filepath.Join(im.Dir, "static")
	pkgs := make([]string, 0, len(Components))
	for _, c := range Components {
		pkgs = append(pkgs, "./"+c)
	}
	for _, a := range arches {
		dir := filepath.Join(static, "linux-"+a) + string(filepath.Separator)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := testenv.GoBuildFor(context.Background(), a, dir, pkgs...); err != nil {
			return err
		}
	}
	goBin, err := testenv.GoCommand()
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "run", "./hack/images", "-bin", static, "-out", im.Dir,
		"-arch", strings.Join(arches, ","), "-images", strings.Join(Components, ","))
	cmd.Dir = root
	if cmd.Env, err = testenv.GoEnv(); err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("building images (go run ./hack/images): %w\n%s", err, out)
	}
	im.Tarballs, im.Refs = ParseImagesOutput(string(out))
	im.Digests = map[string]string{}
	for _, c := range Components {
		if im.Tarballs[c] == "" {
			return fmt.Errorf("hack/images made no %s image:\n%s", c, out)
		}
		if !filepath.IsAbs(im.Tarballs[c]) {
			im.Tarballs[c] = filepath.Join(root, im.Tarballs[c])
		}
		d, err := imageDigest(im.Tarballs[c], runtime.GOARCH)
		if err != nil {
			return fmt.Errorf("%s image: %w", c, err)
		}
		im.Digests[c] = d
	}
	return nil
}

// ParseImagesOutput reads hack/images' lines "<ref> -> <tarball>" into
// the tarball and the reference of each component, recognised by its
// repository's last element (ghcr.io/herald-lb/speaker:v0.1.0 is the
// speaker). Other lines are ignored.
func ParseImagesOutput(out string) (tarballs, refs map[string]string) {
	tarballs, refs = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		ref, path, ok := strings.Cut(line, " -> ")
		if !ok {
			continue
		}
		ref, path = strings.TrimSpace(ref), strings.TrimSpace(path)
		for _, c := range Components {
			if strings.Contains(ref, "/"+c+":") {
				tarballs[c], refs[c] = path, ref
			}
		}
	}
	return tarballs, refs
}

// List is every tarball, for Lab.ImportImages.
func (im *Images) List() []string {
	var out []string
	for _, c := range Components {
		out = append(out, im.Tarballs[c])
	}
	return out
}

// lockFile takes an exclusive lock on path (created if missing), waiting
// for it; the kernel drops it if the process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("images lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("images lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
