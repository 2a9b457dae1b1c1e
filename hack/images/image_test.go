package main

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/herald-lb/herald/internal/testenv"
)

// TestImagesRunTheirBinary builds both images from freshly built static
// binaries, reads each tarball's manifest and config, extracts the binary
// from its layer and runs it with --help.
func TestImagesRunTheirBinary(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{"controller", "speaker"} {
		bin := filepath.Join(dir, c)
		if err := testenv.GoBuild(context.Background(), bin, "./"+c); err != nil {
			t.Fatal(err)
		}
		ref := "ghcr.io/herald-lb/" + c + ":test"
		tarPath := filepath.Join(dir, c+".tar")
		if err := Build(bin, ref, tarPath); err != nil {
			t.Fatal(err)
		}
		tag, _ := name.NewTag(ref)
		img, err := tarball.ImageFromPath(tarPath, &tag)
		if err != nil {
			t.Fatalf("%s: reading the tarball back: %v", c, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != NonRootUser || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/"+c || cfg.OS != "linux" {
			t.Errorf("%s config: user %q entrypoint %v os %q", c, cfg.Config.User, cfg.Config.Entrypoint, cfg.OS)
		}
		m, err := img.Manifest()
		if err != nil || len(m.Layers) != 1 {
			t.Fatalf("%s manifest: %v layers, %v", c, len(m.Layers), err)
		}
		layers, _ := img.Layers()
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		extracted := filepath.Join(dir, c+"-from-image")
		tr := tar.NewReader(rc)
		hdr, err := tr.Next()
		if err != nil || hdr.Name != c {
			t.Fatalf("%s layer: first entry %v, %v", c, hdr, err)
		}
		f, _ := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		rc.Close()
		out, err := exec.Command(extracted, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s from the image: --help: %v\n%s", c, err, out)
		}
		if !strings.Contains(string(out), "-kubeconfig") {
			t.Errorf("%s --help does not document its flags:\n%s", c, out)
		}
	}
}

// TestBuildWithUserAndSource: BuildWith writes the user and the source
// label it is given (MetalLB's images run as root, as distroless/static).
func TestBuildWithUserAndSource(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "speaker")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ref := "quay.io/metallb/speaker:v0.16.2"
	out := filepath.Join(dir, "speaker.tar")
	if err := BuildWith(bin, ref, out, Config{User: "0:0", Source: "https://github.com/metallb/metallb"}); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ref)
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "0:0" || cfg.Config.Labels["org.opencontainers.image.source"] != "https://github.com/metallb/metallb" || cfg.Config.Entrypoint[0] != "/speaker" {
		t.Errorf("config: user %q labels %v entrypoint %v", cfg.Config.User, cfg.Config.Labels, cfg.Config.Entrypoint)
	}
}
