package deploy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/testenv"
)

// Images are Herald's images built from this checkout as `make images`
// builds them (static binaries, then hack/images: OCI image layouts holding
// an image index), but for this machine's architecture only, once per test
// process, into $HERALD_CACHE/e2e-images. The lab's nodes import
// them with `ctr images import`, which takes this machine's platform from
// the index. Another test process reuses what the last one built when its
// inputs have not changed (go install, and a stamp of hack/images' inputs).
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
	return lab.WithFileLock(filepath.Join(cache, "e2e-images.lock"), func() error { return im.buildIn(cache) })
}

// buildIn builds the binaries and the images into cache's e2e-images,
// holding its lock.
func (im *Images) buildIn(cache string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	// Only this machine's architecture, the one the nodes import: `make
	// images` also cross-builds arm64, but on a fresh machine that is a
	// second compile of every dependency (minutes on 2 cores) for an image
	// no node runs. The multi-architecture index of the controller and
	// speaker images is tested by hack/images
	// (TestMakeImagesIndexesControllerAndSpeaker), the archive's reading
	// here by TestImagesOutputAndDigest (the pause image, both
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
	dir := filepath.Join(static, "linux-"+runtime.GOARCH)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// go install links only what changed since the last test process.
	if err := testenv.GoInstall(context.Background(), dir, pkgs...); err != nil {
		return err
	}
	// The archives too are made again only when their inputs changed: the
	// binaries, or hack/images itself.
	key, err := imagesKey(root, dir)
	if err != nil {
		return err
	}
	stamp := filepath.Join(im.Dir, "images.out")
	out, ok := reusableOutput(stamp, key, root)
	if !ok {
		cmd, err := testenv.GoCmd(context.Background(), "run", "./hack/images", "-bin", static, "-out", im.Dir,
			"-arch", strings.Join(arches, ","), "-images", strings.Join(Components, ","))
		if err != nil {
			return err
		}
		if out, err = cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building images (go run ./hack/images): %w\n%s", err, out)
		}
		if err := os.WriteFile(stamp, append([]byte(key+"\n"), out...), 0o644); err != nil {
			return err
		}
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

// imagesKey names what the archives are made from: each component's
// binary in dir and hack/images' source, by their SHA-256.
func imagesKey(root, dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(root, "hack", "images", "*.go"))
	if err != nil {
		return "", err
	}
	for _, c := range Components {
		files = append(files, filepath.Join(dir, c))
	}
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %x\n", filepath.Base(f), sha256.Sum256(data))
	}
	return fmt.Sprintf("inputs %x", h.Sum(nil)), nil
}

// reusableOutput returns hack/images' output recorded in stamp when it was
// made from key and every archive it names is still there.
func reusableOutput(stamp, key, root string) ([]byte, bool) {
	data, err := os.ReadFile(stamp)
	if err != nil {
		return nil, false
	}
	first, rest, ok := strings.Cut(string(data), "\n")
	if !ok || first != key {
		return nil, false
	}
	tarballs, _ := ParseImagesOutput(rest)
	for _, c := range Components {
		t := tarballs[c]
		if t == "" {
			return nil, false
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(root, t)
		}
		if _, err := os.Stat(t); err != nil {
			return nil, false
		}
	}
	return []byte(rest), true
}
