package main

import (
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/herald-lb/herald/test/testenv"
)

// elfMachines is the ELF machine of each architecture's binaries.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkMultiArch reads an image archive back as an OCI image layout: one
// index descriptor named ref as ctr import wants, an OCI index listing
// linux/<arch> for each of arches (sorted), and in each image the config
// of that platform, user and entrypoint, and a binary for that
// architecture.
func checkMultiArch(t *testing.T, archive, ref, user, entry string, arches []string) {
	t.Helper()
	root := untar(t, archive)
	if data, err := os.ReadFile(filepath.Join(root, "oci-layout")); err != nil || !strings.Contains(string(data), `"imageLayoutVersion"`) {
		t.Fatalf("%s: oci-layout: %q, %v", ref, data, err)
	}
	var top v1.IndexManifest
	data, err := os.ReadFile(filepath.Join(root, "index.json"))
	if err != nil || json.Unmarshal(data, &top) != nil {
		t.Fatalf("%s: index.json: %v\n%s", ref, err, data)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("%s: index.json holds %d descriptors, want 1", ref, len(top.Manifests))
	}
	d := top.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Annotations[AnnotationContainerdName] != ref || d.Annotations[AnnotationRefName] != ref {
		t.Errorf("%s: index descriptor %+v", ref, d)
	}
	p, err := layout.FromPath(root)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	inner, err := idx.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, a := range arches {
		want = append(want, "linux/"+a)
	}
	for _, md := range m.Manifests {
		got = append(got, md.Platform.OS+"/"+md.Platform.Architecture)
		checkPlatformImage(t, inner, md, ref, user, entry)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: the index lists platforms %v, want %v", ref, got, want)
	}
}

// checkPlatformImage checks one image of an index against its descriptor.
func checkPlatformImage(t *testing.T, inner v1.ImageIndex, md v1.Descriptor, ref, user, entry string) {
	t.Helper()
	arch := md.Platform.Architecture
	img, err := inner.Image(md.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("%s %s: manifest media type %s", ref, arch, mt)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != arch || cfg.OS != "linux" || cfg.Config.User != user || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != entry {
		t.Errorf("%s %s config: arch %s os %s user %s entrypoint %v", ref, arch, cfg.Architecture, cfg.OS, cfg.Config.User, cfg.Config.Entrypoint)
	}
	bin := extractBinary(t, img, filepath.Join(t.TempDir(), "bin"))
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want, ok := elfMachines[arch]; !ok || f.Machine != want {
		t.Errorf("%s: the %s image holds a %s binary", ref, arch, f.Machine)
	}
}

// makeImages is what the Makefile's images target does: the
// architectures it builds (IMAGE_ARCHES' default) and its recipe.
func makeImages(t *testing.T) (arches []string, recipe string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE_ARCHES \?= (.*)$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("the Makefile sets no IMAGE_ARCHES")
	}
	r := regexp.MustCompile(`(?ms)^images:\n((?:\t[^\n]*\n)+)`).FindStringSubmatch(string(data))
	if r == nil {
		t.Fatal("the Makefile has no images target")
	}
	return fields(m[1]), r[1]
}

// TestMakeImagesIndexesControllerAndSpeaker: `make images` (and `make
// release`, which runs it) builds the controller and the speaker for
// linux/amd64 and linux/arm64, and hack/images, given those binaries,
// writes for each image an OCI index listing both platforms, each with a
// binary of its architecture. Stand-in binaries (the pause program,
// cross-built in seconds) take the place of the controller's and the
// speaker's: a cross-build of those is a second compile of every
// dependency (minutes on 2 cores), and the index does not depend on what
// the binary does (TestImagesRunTheirBinary runs the real ones).
func TestMakeImagesIndexesControllerAndSpeaker(t *testing.T) {
	arches, recipe := makeImages(t)
	for _, want := range []string{"amd64", "arm64"} {
		if !slices.Contains(arches, want) {
			t.Errorf("the Makefile's IMAGE_ARCHES %v lacks %s", arches, want)
		}
	}
	for _, want := range []string{"for a in $(IMAGE_ARCHES)", "GOOS=linux GOARCH=$$a", "./controller ./speaker", "$(GO) run ./hack/images", `-arch "$(IMAGE_ARCHES)"`} {
		if !strings.Contains(recipe, want) {
			t.Errorf("the images recipe lacks %q:\n%s", want, recipe)
		}
	}
	if flagArches := fields(defaultArchFlag); !slices.Equal(flagArches, []string{"amd64", "arm64"}) {
		t.Errorf("hack/images -arch defaults to %v, want amd64 and arm64", flagArches)
	}

	dir := t.TempDir()
	bins := filepath.Join(dir, "static")
	for _, a := range arches {
		pause := crossBuild(t, dir, a, "./e2e/cmd/pause")
		data, err := os.ReadFile(pause)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(bins, "linux-"+a), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"controller", "speaker"} {
			if err := os.WriteFile(filepath.Join(bins, "linux-"+a, name), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(dir, "images")
	if err := run(out, bins, "ghcr.io/herald-lb", "v0.1.0", arches, []string{"controller", "speaker"}, "", HeraldSource); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(arches))
	for _, name := range []string{"controller", "speaker"} {
		checkMultiArch(t, filepath.Join(out, name+".tar"), "ghcr.io/herald-lb/"+name+":v0.1.0", NonRootUser, "/"+name, sorted)
	}
}
