package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUser is the user the images run as (the distroless "nonroot").
const NonRootUser = "65532:65532"

// HeraldSource is the source label of Herald's images.
const HeraldSource = "https://github.com/herald-lb/herald"

// Annotations of the index descriptor in index.json that name the image:
// containerd's `ctr images import` tags the image with the first, and
// tools that follow the OCI image layout read the second.
const (
	AnnotationContainerdName = "io.containerd.image.name"
	AnnotationRefName        = "org.opencontainers.image.ref.name"
)

// Image is one image to build: a single static binary per architecture on
// an empty base, with the binary as entrypoint.
type Image struct {
	// Ref names the image, e.g. ghcr.io/herald-lb/speaker:v0.1.0.
	Ref string
	// User the entrypoint runs as, "uid:gid".
	User string
	// Source is the org.opencontainers.image.source label (empty:
	// HeraldSource).
	Source string
	// Binaries maps a GOARCH (amd64, arm64) to the binary built for it; all
	// have the same base name, which becomes /<name> in the image.
	Binaries map[string]string
}

// Index builds the multi-architecture image index, one OCI image per
// architecture, in sorted architecture order.
func (im Image) Index() (v1.ImageIndex, error) {
	arches := make([]string, 0, len(im.Binaries))
	for a := range im.Binaries {
		arches = append(arches, a)
	}
	sort.Strings(arches)
	if len(arches) == 0 {
		return nil, fmt.Errorf("image %s: no binaries", im.Ref)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		img, err := im.image(arch, im.Binaries[arch])
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx, nil
}

func (im Image) image(arch, binary string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Ref, err)
	}
	entry := "/" + path.Base(binary)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar(entry, data))), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", im.Ref, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	cfg.Config.Entrypoint = []string{entry}
	cfg.Config.User = im.User
	source := im.Source
	if source == "" {
		source = HeraldSource
	}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": source}
	return mutate.ConfigFile(img, cfg)
}

// WriteArchive writes the image as an OCI image layout (oci-layout,
// index.json, blobs/) packed in a tar file at out, the form `ctr images
// import` and `kind load image-archive` take. index.json holds one
// descriptor, of the multi-architecture index, annotated with the image's
// name.
func (im Image) WriteArchive(out string) error {
	idx, err := im.Index()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "herald-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	names := map[string]string{AnnotationContainerdName: im.Ref, AnnotationRefName: im.Ref}
	if err := p.AppendIndex(idx, layout.WithAnnotations(names)); err != nil {
		return fmt.Errorf("image %s: layout: %w", im.Ref, err)
	}
	if err := tarDir(dir, out); err != nil {
		return fmt.Errorf("image %s: writing %s: %w", im.Ref, out, err)
	}
	return nil
}

// tarDir packs a directory into a tar file, entries sorted and with fixed
// times and owners, so that the same input gives the same bytes.
func tarDir(dir, out string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	// Written beside out and renamed over it: whoever is reading the
	// previous archive (a lab's node importing it) keeps a whole file.
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	tw := tar.NewWriter(f)
	for _, p := range files {
		if err := addFile(tw, dir, p); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}

func addFile(tw *tar.Writer, dir, p string) error {
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(dir, p)
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: info.Size()}
	if info.IsDir() {
		hdr.Name += "/"
		hdr.Mode, hdr.Typeflag, hdr.Size = 0o755, tar.TypeDir, 0
	}
	if err := tw.WriteHeader(hdr); err != nil || info.IsDir() {
		return err
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
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
