package main

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/herald-lb/herald/test/testenv"
)

// crossBuild builds a package as a static linux binary for arch into dir.
func crossBuild(t *testing.T, dir, arch, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, "linux-"+arch, filepath.Base(pkg))
	if err := testenv.GoBuildFor(context.Background(), arch, out, pkg); err != nil {
		t.Fatal(err)
	}
	return out
}

// untar unpacks an image archive into a directory.
func untar(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// extractBinary writes the single file of an image's only layer to out.
func extractBinary(t *testing.T, img v1.Image, out string) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s", mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(tr)
	if err := os.WriteFile(out, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMultiArchOCILayout builds the pause image for amd64 and arm64 and
// reads the archive back as an OCI image layout: one index descriptor
// named as ctr import wants, an OCI index with both platforms, and in each
// image a binary for the platform it claims.
func TestMultiArchOCILayout(t *testing.T) {
	dir := t.TempDir()
	im := Image{Ref: PauseRef, User: "65535:65535", Binaries: map[string]string{}}
	for _, a := range []string{"amd64", "arm64"} {
		im.Binaries[a] = crossBuild(t, dir, a, "./e2e/cmd/pause")
	}
	archive := filepath.Join(dir, "pause.tar")
	if err := im.WriteArchive(archive); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.tar")
	if err := im.WriteArchive(again); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(archive)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Error("two builds of the same image differ")
	}

	checkMultiArch(t, archive, PauseRef, "65535:65535", "/pause", []string{"amd64", "arm64"})
}

// imageFor reads the image of this machine's architecture from an archive.
func imageFor(t *testing.T, archive string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(untar(t, archive))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := p.ImageIndex()
	tm, _ := top.IndexManifest()
	inner, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := inner.IndexManifest()
	for _, d := range m.Manifests {
		if d.Platform.Architecture == runtime.GOARCH {
			img, err := inner.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("%s: no %s image", archive, runtime.GOARCH)
	return nil
}

// TestPauseWaitsForTERM: the pause binary taken from its image keeps
// running until SIGTERM and then exits 0.
func TestPauseWaitsForTERM(t *testing.T) {
	dir := t.TempDir()
	im := Image{Ref: PauseRef, User: "65535:65535", Binaries: map[string]string{runtime.GOARCH: crossBuild(t, dir, runtime.GOARCH, "./e2e/cmd/pause")}}
	archive := filepath.Join(dir, "pause.tar")
	if err := im.WriteArchive(archive); err != nil {
		t.Fatal(err)
	}
	bin := extractBinary(t, imageFor(t, archive), filepath.Join(dir, "pause-from-image"))
	cmd := exec.Command(bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The Go runtime catches every signal from the start, so /proc's
	// SigCgt cannot tell when pause's own handler is in place; its one
	// line on stderr does.
	waiting := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stderr).ReadString('\n')
		if err == nil && !strings.Contains(line, "waiting") {
			err = fmt.Errorf("pause wrote %q", line)
		}
		waiting <- err
	}()
	select {
	case err := <-waiting:
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("pause said nothing within 10 s")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("pause exited by itself: %v", err)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pause after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("pause did not exit within 10 s of SIGTERM")
	}
}

// TestImagesRunTheirBinary builds the controller, speaker and podserver
// images for this machine's architecture, and runs each binary taken from
// its image with --help.
func TestImagesRunTheirBinary(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ pkg, wantFlag string }{
		{"./controller", "-kubeconfig"}, {"./speaker", "-kubeconfig"}, {"./e2e/cmd/podserver", "-ports"},
	} {
		name := filepath.Base(c.pkg)
		bin := filepath.Join(dir, "linux-"+runtime.GOARCH, name)
		if err := testenv.GoBuild(context.Background(), bin, c.pkg); err != nil {
			t.Fatal(err)
		}
		ref := "ghcr.io/herald-lb/" + name + ":test"
		archive := filepath.Join(dir, name+".tar")
		if err := (Image{Ref: ref, User: NonRootUser, Binaries: map[string]string{runtime.GOARCH: bin}}).WriteArchive(archive); err != nil {
			t.Fatal(err)
		}
		img := imageFor(t, archive)
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != NonRootUser || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/"+name {
			t.Errorf("%s config: user %q entrypoint %v", name, cfg.Config.User, cfg.Config.Entrypoint)
		}
		out, err := exec.Command(extractBinary(t, img, filepath.Join(dir, name+"-from-image")), "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s from the image: --help: %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), c.wantFlag) {
			t.Errorf("%s --help does not document %s:\n%s", name, c.wantFlag, out)
		}
	}
}

// TestRunNamesEveryImage: the command builds the four archives, named as
// the lab imports them.
func TestRunNamesEveryImage(t *testing.T) {
	var refs []string
	for _, b := range images("ghcr.io/herald-lb", "v0.1.0") {
		refs = append(refs, fmt.Sprintf("%s=%s", b.bin, b.ref))
	}
	want := "controller=ghcr.io/herald-lb/controller:v0.1.0 speaker=ghcr.io/herald-lb/speaker:v0.1.0 podserver=ghcr.io/herald-lb/podserver:v0.1.0 pause=registry.k8s.io/pause:3.10"
	if strings.Join(refs, " ") != want {
		t.Errorf("images %v", refs)
	}
}

// TestRunWithUserAndSource: -user and -source apply to every image built
// (hack/build-metallb.sh packages MetalLB's binaries, which run as root,
// as distroless/static does), and -images builds only those asked for.
func TestRunWithUserAndSource(t *testing.T) {
	dir := t.TempDir()
	bins := filepath.Join(dir, "bin", "linux-amd64")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"controller", "speaker"} {
		if err := os.WriteFile(filepath.Join(bins, b), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "images")
	const src = "https://github.com/metallb/metallb"
	if err := run(out, filepath.Join(dir, "bin"), "quay.io/metallb", "v0.16.2", []string{"amd64"}, []string{"controller", "speaker"}, "0:0", src); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"controller", "speaker"} {
		p, err := layout.FromPath(untar(t, filepath.Join(out, b+".tar")))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		top, err := idx.IndexManifest()
		if err != nil || len(top.Manifests) != 1 {
			t.Fatalf("%s: index %v, %v", b, top, err)
		}
		if ref := top.Manifests[0].Annotations[AnnotationContainerdName]; ref != "quay.io/metallb/"+b+":v0.16.2" {
			t.Errorf("%s named %q", b, ref)
		}
		multi, err := idx.ImageIndex(top.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		mm, err := multi.IndexManifest()
		if err != nil || len(mm.Manifests) != 1 {
			t.Fatalf("%s: per-arch index %v, %v", b, mm, err)
		}
		img, err := multi.Image(mm.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != "0:0" || cfg.Config.Labels["org.opencontainers.image.source"] != src || cfg.Config.Entrypoint[0] != "/"+b {
			t.Errorf("%s config: user %q labels %v entrypoint %v", b, cfg.Config.User, cfg.Config.Labels, cfg.Config.Entrypoint)
		}
	}
	for _, b := range []string{"podserver", "pause"} {
		if _, err := os.Stat(filepath.Join(out, b+".tar")); err == nil {
			t.Errorf("%s built although -images named only controller and speaker", b)
		}
	}
}
