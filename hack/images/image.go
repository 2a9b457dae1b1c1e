package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRootUser is the user the images run as (the distroless "nonroot").
const NonRootUser = "65532:65532"

// HeraldSource is the source label of Herald's images.
const HeraldSource = "https://github.com/herald-lb/herald"

// Config is what an image's configuration says besides its entrypoint.
type Config struct {
	// User the entrypoint runs as ("uid:gid").
	User string
	// Source is the org.opencontainers.image.source label.
	Source string
}

// Build writes an image tarball holding binary as /<base name>, with that
// as entrypoint, running as NonRootUser, tagged ref.
func Build(binary, ref, out string) error {
	return BuildWith(binary, ref, out, Config{User: NonRootUser, Source: HeraldSource})
}

// BuildWith is Build with the user and source label of conf (hack/build-
// metallb.sh packages MetalLB's binaries with it).
func BuildWith(binary, ref, out string, conf Config) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	entry := "/" + path.Base(binary)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar(entry, data))), nil
	})
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	cfg.Config.Entrypoint = []string{entry}
	cfg.Config.User = conf.User
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": conf.Source}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("image %s: writing %s: %w", ref, out, err)
	}
	return nil
}

// layerTar is a tar stream with one executable file, owned by root and
// readable by the non-root user.
func layerTar(entry string, data []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: entry[1:], Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
	_, _ = tw.Write(data)
	_ = tw.Close()
	return buf.Bytes()
}
