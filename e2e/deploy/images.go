package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/herald-lb/herald/internal/testenv"
)

// Images are Herald's images built from this checkout exactly as `make
// images` builds them (static binaries, then hack/images), once per test
// process, into $HERALD_CACHE/e2e-images.
type Images struct {
	once sync.Once
	err  error
	// Dir holds the tarballs; Tarballs maps component to its tarball and
	// Digests to its image digest (what the pods must run).
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
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	im.Dir = filepath.Join(cache, "e2e-images")
	static := filepath.Join(im.Dir, "static")
	if err := os.MkdirAll(static, 0o755); err != nil {
		return err
	}
	for _, c := range Components {
		if err := testenv.GoBuild(context.Background(), filepath.Join(static, c), "./"+c); err != nil {
			return err
		}
	}
	goBin, err := testenv.GoCommand()
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "run", "./hack/images", "-bin", static, "-out", im.Dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("building images (go run ./hack/images): %w\n%s", err, out)
	}
	im.Tarballs, im.Digests, im.Refs = map[string]string{}, map[string]string{}, map[string]string{}
	// hack/images prints "<ref> -> <tarball>" per image
	for _, line := range strings.Split(string(out), "\n") {
		ref, path, ok := strings.Cut(line, " -> ")
		if !ok {
			continue
		}
		for _, c := range Components {
			if strings.Contains(ref, "/"+c+":") {
				im.Tarballs[c], im.Refs[c] = strings.TrimSpace(path), strings.TrimSpace(ref)
			}
		}
	}
	for _, c := range Components {
		if im.Tarballs[c] == "" {
			return fmt.Errorf("hack/images made no %s image:\n%s", c, out)
		}
		if !filepath.IsAbs(im.Tarballs[c]) {
			im.Tarballs[c] = filepath.Join(root, im.Tarballs[c])
		}
		d, err := imageDigest(im.Tarballs[c])
		if err != nil {
			return fmt.Errorf("%s image: %w", c, err)
		}
		im.Digests[c] = d
	}
	return nil
}

// imageDigest is the digest of the image's config: containerd's image ID,
// which a pod's status.containerStatuses[].imageID shows for an imported
// image (it has no registry digest).
func imageDigest(path string) (string, error) {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return "", err
	}
	d, err := img.ConfigName()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// List is every tarball, for Lab.ImportImages.
func (im *Images) List() []string {
	var out []string
	for _, c := range Components {
		out = append(out, im.Tarballs[c])
	}
	return out
}
