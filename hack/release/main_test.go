package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var testPlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}}

// fakeBins writes a fake binary per platform, its content naming the
// platform, and returns the -bin directory.
func fakeBins(t *testing.T, ps []platform) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range ps {
		path := binaryPath(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("binary for "+p.String()), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testOptions packs ps from fake binaries, with a LICENSE when license
// is not empty.
func testOptions(t *testing.T, ps []platform, license string) options {
	t.Helper()
	o := options{binDir: fakeBins(t, ps), out: filepath.Join(t.TempDir(), "release"),
		version: "v1.2.3", homepage: "https://example.com/herald", platforms: ps,
		license: filepath.Join(t.TempDir(), "LICENSE")}
	if license != "" {
		if err := os.WriteFile(o.license, []byte(license), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func mustRun(t *testing.T, o options) {
	t.Helper()
	if err := run(o); err != nil {
		t.Fatal(err)
	}
}

// entry is one tar member as read back.
type entry struct {
	hdr  *tar.Header
	data string
}

// readArchive checks the gzip header and returns the tar members.
func readArchive(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header has name %q, mtime %v", path, zr.Name, zr.ModTime)
	}
	var es []entry
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return es
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, entry{hdr, string(data)})
	}
}

// checkEntry checks one member's name, mode, owner, mtime and content.
func checkEntry(t *testing.T, e entry, name string, mode int64, data string, mtime int64) {
	t.Helper()
	h := e.hdr
	if h.Name != name || h.Mode != mode || h.Typeflag != tar.TypeReg || e.data != data {
		t.Errorf("member %q mode %o type %c content %q; want %q mode %o content %q", h.Name, h.Mode, h.Typeflag, e.data, name, mode, data)
	}
	if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != mtime {
		t.Errorf("%s: owner %d:%d (%q:%q), mtime %d; want 0:0, no names, mtime %d", name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), mtime)
	}
}

func TestArchiveContents(t *testing.T) {
	o := testOptions(t, testPlatforms, "the licence")
	mustRun(t, o)
	for _, p := range o.platforms {
		es := readArchive(t, filepath.Join(o.out, archiveName(o.version, p)))
		if len(es) != 2 {
			t.Fatalf("%s: %d members, want kubectl-herald and LICENSE", p, len(es))
		}
		checkEntry(t, es[0], "kubectl-herald", 0o755, "binary for "+p.String(), 0)
		checkEntry(t, es[1], "LICENSE", 0o644, "the licence", 0)
	}
}

func TestArchiveWithoutLicense(t *testing.T) {
	o := testOptions(t, testPlatforms[:1], "")
	mustRun(t, o)
	es := readArchive(t, filepath.Join(o.out, "kubectl-herald_v1.2.3_linux_amd64.tar.gz"))
	if len(es) != 1 {
		t.Fatalf("%d members, want kubectl-herald alone", len(es))
	}
	checkEntry(t, es[0], "kubectl-herald", 0o755, "binary for linux/amd64", 0)
	m := readManifest(t, o.out)
	if f := m.Spec.Platforms[0].Files; len(f) != 1 || f[0].From != "kubectl-herald" || f[0].To != "." {
		t.Errorf("files %+v, want kubectl-herald to .", f)
	}
}

func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	o := testOptions(t, testPlatforms[:1], "")
	mustRun(t, o)
	es := readArchive(t, filepath.Join(o.out, archiveName(o.version, o.platforms[0])))
	checkEntry(t, es[0], "kubectl-herald", 0o755, "binary for linux/amd64", 1700000000)

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if err := run(o); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("bad SOURCE_DATE_EPOCH: error %v", err)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func TestChecksums(t *testing.T) {
	o := testOptions(t, testPlatforms, "")
	mustRun(t, o)
	data, err := os.ReadFile(filepath.Join(o.out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, name := range []string{ // sorted by name
		"kubectl-herald_v1.2.3_darwin_arm64.tar.gz",
		"kubectl-herald_v1.2.3_linux_amd64.tar.gz",
		"kubectl-herald_v1.2.3_linux_arm64.tar.gz",
	} {
		want.WriteString(fileSHA256(t, filepath.Join(o.out, name)) + "  " + name + "\n")
	}
	if string(data) != want.String() {
		t.Errorf("checksums.txt:\n%s\nwant:\n%s", data, want.String())
	}
}

// krewPlugin is the part of a krew manifest the tests read.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

func readManifest(t *testing.T, out string) krewPlugin {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "herald.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("herald.yaml: %v\n%s", err, data)
	}
	return m
}

func TestManifest(t *testing.T) {
	o := testOptions(t, testPlatforms, "licence")
	mustRun(t, o)
	m := readManifest(t, o.out)
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "herald" {
		t.Errorf("header %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	s := m.Spec
	if s.Version != "v1.2.3" || s.Homepage != o.homepage || s.Description == "" {
		t.Errorf("version %q, homepage %q, description %q", s.Version, s.Homepage, s.Description)
	}
	if n := len(s.ShortDescription); n == 0 || n > 50 {
		t.Errorf("shortDescription %q: %d characters, want 1-50", s.ShortDescription, n)
	}
	if len(s.Platforms) != len(o.platforms) {
		t.Fatalf("%d platforms, want %d", len(s.Platforms), len(o.platforms))
	}
	for i, p := range o.platforms {
		mp := s.Platforms[i]
		name := archiveName(o.version, p)
		wantURI := "https://example.com/herald/releases/download/v1.2.3/" + name
		if l := mp.Selector.MatchLabels; len(l) != 2 || l["os"] != p.OS || l["arch"] != p.Arch {
			t.Errorf("%s: matchLabels %v", p, l)
		}
		if mp.URI != wantURI || mp.SHA256 != fileSHA256(t, filepath.Join(o.out, name)) || mp.Bin != "kubectl-herald" {
			t.Errorf("%s: uri %s sha256 %s bin %s; want uri %s and the archive's sha256", p, mp.URI, mp.SHA256, mp.Bin, wantURI)
		}
		if got := fmt.Sprint(mp.Files); got != "[{kubectl-herald .} {LICENSE .}]" {
			t.Errorf("%s: files %s", p, got)
		}
	}
}

// TestReproducible packs the same binaries twice, their file times
// changed in between, and wants the same bytes.
func TestReproducible(t *testing.T) {
	o := testOptions(t, testPlatforms, "licence")
	mustRun(t, o)
	first := o.out
	o.out = filepath.Join(t.TempDir(), "again")
	later := time.Now().Add(time.Hour)
	for _, p := range o.platforms {
		if err := os.Chtimes(binaryPath(o.binDir, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, o)
	names := []string{"checksums.txt", "herald.yaml"}
	for _, p := range o.platforms {
		names = append(names, archiveName(o.version, p))
	}
	for _, name := range names {
		a, errA := os.ReadFile(filepath.Join(first, name))
		b, errB := os.ReadFile(filepath.Join(o.out, name))
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

func TestMissingBinary(t *testing.T) {
	o := testOptions(t, testPlatforms[:1], "")
	o.platforms = testPlatforms
	err := run(o)
	want := filepath.Join(o.binDir, "linux-arm64", "kubectl-herald")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one naming %s", err, want)
	}
	if _, err := os.Stat(o.out); !os.IsNotExist(err) {
		t.Errorf("output directory written despite the error (%v)", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	ps, err := parsePlatforms(fields("linux/amd64, darwin/arm64 linux/arm64"))
	if err != nil || fmt.Sprint(ps) != "[linux/amd64 darwin/arm64 linux/arm64]" {
		t.Errorf("got %v, %v", ps, err)
	}
	if _, err := parsePlatforms(fields(" , ")); err == nil {
		t.Error("empty list: no error")
	}
	for _, bad := range []string{"linux", "linux/", "/amd64", "linux/arm/v7", "linux-amd64"} {
		_, err := parsePlatforms([]string{"darwin/arm64", bad})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("%q: error %v, want one naming it", bad, err)
		}
	}
	if _, err := parsePlatforms(fields("linux/amd64 linux/amd64")); err == nil {
		t.Error("repeated platform: no error")
	}
}

func TestRunRefuses(t *testing.T) {
	o := testOptions(t, testPlatforms[:1], "")
	o.platforms = nil
	if err := run(o); err == nil || !strings.Contains(err.Error(), "no platform") {
		t.Errorf("no platforms: error %v", err)
	}
	o = testOptions(t, testPlatforms[:1], "")
	for _, v := range []string{"", "1.2.3", "v1.2", "latest"} {
		o.version = v
		if err := run(o); err == nil || !strings.Contains(err.Error(), "-version") {
			t.Errorf("version %q: error %v", v, err)
		}
	}
}
