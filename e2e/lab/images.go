package lab

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The lab's own images: the pod sandbox (what registry.k8s.io/pause is on
// a real cluster; containerd's sandbox_image names it) and the test
// backend. Both are one static binary on an empty base, built from this
// repository and imported into every node's containerd, so no pod ever
// pulls from a registry.
const (
	PauseImage   = "registry.k8s.io/pause:3.10"
	BackendImage = "lab.herald.dev/podserver:test"
)

// buildImage writes a docker-archive tarball (what `ctr images import`
// takes) holding binary as /<name>, its entrypoint.
func buildImage(binary, ref, out string) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	entry := filepath.Base(binary)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: entry, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = runtime.GOARCH, "linux"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{"/" + entry}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// buildLabImages packs the pause and podserver binaries as images in the
// run directory and returns the tarballs.
func (l *Lab) buildLabImages() ([]string, error) {
	dir := filepath.Join(l.dir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, im := range []struct{ bin, ref string }{{l.bin.pause, PauseImage}, {l.bin.podserver, BackendImage}} {
		tarPath := filepath.Join(dir, filepath.Base(im.bin)+".tar")
		if err := buildImage(im.bin, im.ref, tarPath); err != nil {
			return nil, err
		}
		out = append(out, tarPath)
	}
	return out, nil
}

// ImportImages imports image tarballs (docker archives or OCI layouts)
// into every node's containerd, in the k8s.io namespace the kubelet uses.
func (l *Lab) ImportImages(ctx context.Context, tarballs ...string) error {
	return parallel(len(l.nodes), func(i int) error { return l.ImportImagesOn(ctx, l.nodes[i].Name, tarballs...) })
}

// ImportImagesOn imports image tarballs into one node's containerd.
func (l *Lab) ImportImagesOn(ctx context.Context, node string, tarballs ...string) error {
	for _, t := range tarballs {
		if _, err := l.Ctr(ctx, node, "images", "import", t); err != nil {
			return fmt.Errorf("importing %s into %s's containerd: %w", filepath.Base(t), node, err)
		}
	}
	return nil
}
