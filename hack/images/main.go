// Command images builds Herald's container images without a container
// engine, as OCI image layouts packed in tar files: for each image a
// multi-architecture index (linux/amd64 and linux/arm64) of images that
// each hold one static binary on an empty base, with the binary as
// entrypoint. The index is annotated with the image's name
// (io.containerd.image.name, org.opencontainers.image.ref.name), so
// `ctr -n k8s.io images import bin/images/speaker.tar` (and `kind load
// image-archive`) tag it.
//
// Images: controller and speaker (ghcr.io/herald-lb/...:TAG, run as
// 65532), the test backend podserver (e2e/cmd/podserver,
// ghcr.io/herald-lb/podserver:TAG) and a pause image (e2e/cmd/pause,
// registry.k8s.io/pause:3.10, run as 65535) for clusters that cannot pull.
//
// Usage: go run ./hack/images -bin bin/static -out bin/images -tag v0.1.0
// with the static binaries in bin/static/linux-<arch>/ (make images builds
// them and calls it; e2e/deploy does the same). -images limits what is
// built. It prints one line "<ref> -> <tarball>" per image, which
// e2e/deploy reads, after a line naming the architectures.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PauseRef is the pause image's name, the one the kubelet asks for by
// default.
const PauseRef = "registry.k8s.io/pause:3.10"

// defaultArchFlag is -arch's default: the architectures of Herald's
// images.
const defaultArchFlag = "amd64 arm64"

// images lists what is built: binary name and reference.
func images(repo, tag string) []struct{ bin, ref, user string } {
	return []struct{ bin, ref, user string }{
		{"controller", repo + "/controller:" + tag, NonRootUser},
		{"speaker", repo + "/speaker:" + tag, NonRootUser},
		{"podserver", repo + "/podserver:" + tag, NonRootUser},
		{"pause", PauseRef, "65535:65535"},
	}
}

func main() {
	out := flag.String("out", "bin/images", "directory for the tarballs")
	binDir := flag.String("bin", "bin/static", "directory holding linux-<arch>/ directories of static binaries")
	repo := flag.String("repo", "ghcr.io/herald-lb", "image repository")
	tag := flag.String("tag", "v0.1.0", "image tag")
	arches := flag.String("arch", defaultArchFlag, "architectures, space- or comma-separated")
	only := flag.String("images", "", "build only these images (controller, speaker, podserver, pause), space- or comma-separated; empty: all")
	user := flag.String("user", "", "user every entrypoint runs as (uid:gid); empty: each image's own (Herald's run as "+NonRootUser+")")
	source := flag.String("source", HeraldSource, "org.opencontainers.image.source label (hack/build-metallb.sh packages MetalLB's binaries)")
	flag.Parse()
	if err := run(*out, *binDir, *repo, *tag, fields(*arches), fields(*only), *user, *source); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

func run(out, binDir, repo, tag string, arches, only []string, user, source string) error {
	if len(arches) == 0 {
		return fmt.Errorf("-arch: no architecture")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, b := range images(repo, tag) {
		known[b.bin] = true
	}
	for _, o := range only {
		if !known[o] {
			return fmt.Errorf("-images: unknown image %q", o)
		}
	}
	fmt.Printf("architectures: %s\n", strings.Join(arches, ", "))
	for _, b := range images(repo, tag) {
		if len(only) > 0 && !slices.Contains(only, b.bin) {
			continue
		}
		im := Image{Ref: b.ref, User: b.user, Source: source, Binaries: map[string]string{}}
		if user != "" {
			im.User = user
		}
		for _, a := range arches {
			im.Binaries[a] = filepath.Join(binDir, "linux-"+a, b.bin)
		}
		path := filepath.Join(out, b.bin+".tar")
		if err := im.WriteArchive(path); err != nil {
			return err
		}
		fmt.Printf("%s -> %s\n", b.ref, path)
	}
	return nil
}
