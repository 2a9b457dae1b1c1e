package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/herald-lb/herald/test/testenv"
)

// TestImagesOutputAndDigest runs hack/images as Images.build does (two
// architectures of the small pause binary) and reads its output and the
// archive back: the reference and path parse, and each architecture's
// config digest is found and differs from the other's. It needs no lab.
func TestImagesOutputAndDigest(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	static, out := t.TempDir(), t.TempDir()
	for _, a := range []string{"amd64", "arm64"} {
		if err := testenv.GoBuildFor(context.Background(), a, filepath.Join(static, "linux-"+a, "pause"), "./e2e/cmd/pause"); err != nil {
			t.Fatal(err)
		}
	}
	goBin, err := testenv.GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "run", "./hack/images", "-bin", static, "-out", out, "-arch", "amd64,arm64", "-images", "pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/images: %v\n%s", err, msg)
	}
	var archive string
	for _, line := range strings.Split(string(msg), "\n") {
		if ref, path, ok := strings.Cut(line, " -> "); ok && ref == "registry.k8s.io/pause:3.10" {
			archive = path
		}
	}
	if archive != filepath.Join(out, "pause.tar") {
		t.Fatalf("no \"<ref> -> <tarball>\" line for pause in:\n%s", msg)
	}
	digests := map[string]string{}
	for _, a := range []string{"amd64", "arm64"} {
		d, err := imageDigest(archive, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
			t.Errorf("%s digest %q", a, d)
		}
		digests[a] = d
	}
	if digests["amd64"] == digests["arm64"] {
		t.Errorf("both architectures have config %s", digests["amd64"])
	}
	if _, err := imageDigest(archive, "s390x"); err == nil {
		t.Error("an architecture the index lacks has a digest")
	}
	if _, err := imageDigest(archive, runtime.GOARCH); err != nil {
		t.Errorf("this machine's architecture: %v", err)
	}
}

// TestParseImagesOutput: the components are recognised by repository,
// the architectures line and other images are ignored.
func TestParseImagesOutput(t *testing.T) {
	out := "architectures: amd64, arm64\n" +
		"ghcr.io/herald-lb/controller:v0.1.0 -> /c/controller.tar\n" +
		"ghcr.io/herald-lb/speaker:v0.1.0 -> /c/speaker.tar\n" +
		"registry.k8s.io/pause:3.10 -> /c/pause.tar\n"
	tarballs, refs := ParseImagesOutput(out)
	if tarballs["controller"] != "/c/controller.tar" || refs["controller"] != "ghcr.io/herald-lb/controller:v0.1.0" ||
		tarballs["speaker"] != "/c/speaker.tar" || refs["speaker"] != "ghcr.io/herald-lb/speaker:v0.1.0" || len(tarballs) != 2 {
		t.Errorf("tarballs %v refs %v", tarballs, refs)
	}
}

// TestSplitRef: the chart's image values from a reference.
func TestSplitRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"ghcr.io/herald-lb/speaker:v0.1.0": {"ghcr.io/herald-lb/speaker", "v0.1.0"},
		"localhost:5000/speaker:dev":       {"localhost:5000/speaker", "dev"},
		"localhost:5000/speaker":           {"localhost:5000/speaker", ""},
	} {
		if repo, tag := splitRef(ref); repo != want[0] || tag != want[1] {
			t.Errorf("splitRef(%q) = %q, %q; want %q, %q", ref, repo, tag, want[0], want[1])
		}
	}
}
