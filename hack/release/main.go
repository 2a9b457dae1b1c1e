// Command release packs the kubectl plugin kubectl-herald for release,
// krew-style: for each platform a tarball
// kubectl-herald_<version>_<os>_<arch>.tar.gz holding the binary (and
// LICENSE, when the repository has one), checksums.txt in sha256sum
// format, and a krew plugin manifest herald.yaml whose URIs point where a
// GitHub release of that version would serve the archives (nothing is
// published).
//
// The archives are reproducible: fixed tar headers (mtime 0, or
// SOURCE_DATE_EPOCH when set; uid/gid 0; no user names) and a gzip header
// with no name and no mtime, so the same binaries give the same bytes.
//
// Usage: go run ./hack/release -bin bin/static -out bin/release
// -version v0.1.0 -platforms "linux/amd64 darwin/arm64", with the static
// binaries in bin/static/<os>-<arch>/kubectl-herald (make release builds
// them and calls it).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Binary is the plugin's binary, its name inside every archive.
const Binary = "kubectl-herald"

// options is what one run packs, and where.
type options struct {
	binDir, out, version, homepage string
	platforms                      []platform
	// license is the LICENSE file to include; empty or missing: none.
	license string
}

func main() {
	binDir := flag.String("bin", "bin/static", "directory holding <os>-<arch>/"+Binary+" static binaries")
	out := flag.String("out", "bin/release", "directory for the archives, checksums.txt and herald.yaml")
	version := flag.String("version", "", "release version, e.g. v0.1.0")
	platforms := flag.String("platforms", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64", "os/arch pairs, space- or comma-separated")
	homepage := flag.String("homepage", "https://github.com/herald-lb/herald", "project URL; archive URIs are <homepage>/releases/download/<version>/<archive>")
	license := flag.String("license", "LICENSE", "license file packed beside the binary when it exists; empty: none")
	flag.Parse()
	o := options{binDir: *binDir, out: *out, version: *version, homepage: *homepage, license: *license}
	ps, err := parsePlatforms(fields(*platforms))
	if err == nil {
		o.platforms = ps
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// platform is one os/arch pair.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "/" + p.Arch }

// parsePlatforms reads os/arch pairs; it refuses an empty list, a
// malformed pair and a repeated one.
func parsePlatforms(list []string) ([]platform, error) {
	if len(list) == 0 {
		return nil, errors.New("-platforms: no platform")
	}
	var ps []platform
	for _, s := range list {
		goos, arch, ok := strings.Cut(s, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("-platforms: %q is not os/arch", s)
		}
		p := platform{goos, arch}
		if slices.Contains(ps, p) {
			return nil, fmt.Errorf("-platforms: %q given twice", s)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// semver is what krew accepts as spec.version: v, then a semantic version.
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// archiveName is the tarball's file name for a platform.
func archiveName(version string, p platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", Binary, version, p.OS, p.Arch)
}

// binaryPath is where the static binary for a platform is expected.
func binaryPath(binDir string, p platform) string {
	return filepath.Join(binDir, p.OS+"-"+p.Arch, Binary)
}

// artefact is one archive written: its platform, file name and sha256.
type artefact struct {
	platform platform
	name     string
	sha256   string
}

// run checks every input, then writes the archives, checksums.txt and
// herald.yaml into o.out.
func run(o options) error {
	if !semver.MatchString(o.version) {
		return fmt.Errorf("-version: %q is not a version like v0.1.0", o.version)
	}
	if len(o.platforms) == 0 {
		return errors.New("-platforms: no platform")
	}
	mtime, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	license, err := licenseFile(o.license)
	if err != nil {
		return err
	}
	if err := checkBinaries(o.binDir, o.platforms); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var arts []artefact
	for _, p := range o.platforms {
		a, err := writeArchive(o, p, license, mtime)
		if err != nil {
			return err
		}
		arts = append(arts, a)
	}
	if err := writeChecksums(o.out, arts); err != nil {
		return err
	}
	return writeManifest(o, arts, license != "")
}

// sourceDateEpoch is the archives' mtime: SOURCE_DATE_EPOCH, else 0.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %q is not seconds since 1970", s)
	}
	return time.Unix(n, 0), nil
}

// checkBinaries fails, naming the path, when a platform's binary is
// missing, before anything is written.
func checkBinaries(binDir string, ps []platform) error {
	for _, p := range ps {
		path := binaryPath(binDir, p)
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%s: no binary at %s", p, path)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file", p, path)
		}
	}
	return nil
}

// licenseFile returns path when it names a file, "" when it is empty or
// names nothing.
func licenseFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("-license: %s is not a regular file", path)
	}
	return path, nil
}

// member is one file packed into an archive.
type member struct {
	name, path string
	mode       int64
}

// writeArchive packs one platform's archive and returns it with its
// sha256.
func writeArchive(o options, p platform, license string, mtime time.Time) (artefact, error) {
	members := []member{{Binary, binaryPath(o.binDir, p), 0o755}}
	if license != "" {
		members = append(members, member{"LICENSE", license, 0o644})
	}
	data, err := tarGz(members, mtime)
	if err != nil {
		return artefact{}, fmt.Errorf("%s: %w", p, err)
	}
	a := artefact{platform: p, name: archiveName(o.version, p), sha256: sum(data)}
	return a, os.WriteFile(filepath.Join(o.out, a.name), data, 0o644)
}

// tarGz packs the members, in order, with fixed headers: only name,
// mode, size and mtime vary with the input. The gzip header carries no
// name and no mtime.
func tarGz(members []member, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range members {
		data, err := os.ReadFile(m.path)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: m.name, Mode: m.mode, Size: int64(len(data)),
			ModTime: mtime, Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// writeChecksums writes checksums.txt as sha256sum prints it (two spaces
// between hash and name), sorted by file name.
func writeChecksums(out string, arts []artefact) error {
	arts = slices.Clone(arts)
	slices.SortFunc(arts, func(a, b artefact) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, a := range arts {
		b.WriteString(a.sha256 + "  " + a.name + "\n")
	}
	return os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(b.String()), 0o644)
}

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2
// Plugin), the fields Herald fills in.
type (
	Manifest struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Metadata   Metadata `json:"metadata"`
		Spec       Spec     `json:"spec"`
	}
	Metadata struct {
		Name string `json:"name"`
	}
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Platforms        []Platform `json:"platforms"`
	}
	Platform struct {
		Selector Selector        `json:"selector"`
		URI      string          `json:"uri"`
		SHA256   string          `json:"sha256"`
		Bin      string          `json:"bin"`
		Files    []FileOperation `json:"files"`
	}
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	// FileOperation is krew's FileOperation: copy From (a glob in the
	// archive) to To (in the plugin's install directory).
	FileOperation struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
)

const (
	shortDescription = "Migrate from MetalLB and show who announces what"
	description      = `Herald is a load balancer for bare-metal Kubernetes clusters.
"kubectl herald migrate" converts a MetalLB configuration into Herald's
objects (and, with --plan, prints the takeover script for the cluster);
"kubectl herald status" shows, for each LoadBalancer Service, its
addresses, pool and which nodes announce it, over L2 or BGP.
It only reads from the cluster.
`
)

// manifest is the krew manifest for the archives written.
func manifest(o options, arts []artefact, withLicense bool) Manifest {
	files := []FileOperation{{From: Binary, To: "."}}
	if withLicense {
		files = append(files, FileOperation{From: "LICENSE", To: "."})
	}
	m := Manifest{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   Metadata{Name: "herald"},
		Spec: Spec{
			Version: o.version, Homepage: o.homepage,
			ShortDescription: shortDescription, Description: description,
		},
	}
	base := strings.TrimSuffix(o.homepage, "/") + "/releases/download/" + o.version + "/"
	for _, a := range arts {
		m.Spec.Platforms = append(m.Spec.Platforms, Platform{
			Selector: Selector{MatchLabels: map[string]string{"os": a.platform.OS, "arch": a.platform.Arch}},
			URI:      base + a.name, SHA256: a.sha256, Bin: Binary, Files: files,
		})
	}
	return m
}

// writeManifest writes herald.yaml, krew's name for plugin herald's
// manifest.
func writeManifest(o options, arts []artefact, withLicense bool) error {
	data, err := yaml.Marshal(manifest(o, arts, withLicense))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "herald.yaml"), data, 0o644)
}
