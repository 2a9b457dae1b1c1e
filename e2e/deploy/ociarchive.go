package deploy

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// maxMetadataBlob bounds the blobs read into memory from an archive:
// indexes, manifests and configs are a few kB; layers are skipped.
const maxMetadataBlob = 1 << 20

// imageDigest is the config digest of the arch image in an OCI image
// layout archive (hack/images' format: index.json naming one
// multi-architecture index). That is containerd's image ID, which a pod's
// status.containerStatuses[].imageID shows for an imported image (it has
// no registry digest): the CRI plugin resolves the index to this
// machine's platform.
func imageDigest(archive, arch string) (string, error) {
	blobs, err := readMetadata(archive)
	if err != nil {
		return "", err
	}
	top, ok := blobs["index.json"]
	if !ok {
		return "", fmt.Errorf("%s: no index.json (not an OCI image layout)", archive)
	}
	return configFor(blobs, top, arch, 0)
}

// configFor walks an index (nested indexes included) to the manifest of
// linux/arch and returns its config digest.
func configFor(blobs map[string][]byte, index []byte, arch string, depth int) (string, error) {
	if depth > 4 {
		return "", errors.New("indexes nested too deep")
	}
	m, err := v1.ParseIndexManifest(bytes.NewReader(index))
	if err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	for _, d := range m.Manifests {
		data, ok := blobs[d.Digest.String()]
		if !ok {
			continue
		}
		if d.MediaType.IsIndex() {
			if c, err := configFor(blobs, data, arch, depth+1); err == nil {
				return c, nil
			}
			continue
		}
		if d.Platform != nil && (d.Platform.OS != "linux" || d.Platform.Architecture != arch) {
			continue
		}
		man, err := v1.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return "", fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
		return man.Config.Digest.String(), nil
	}
	return "", fmt.Errorf("no linux/%s image in the index", arch)
}

// readMetadata reads index.json and every small blob of an OCI layout
// archive, keyed "index.json" and "sha256:<hex>".
func readMetadata(archive string) (map[string][]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blobs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return blobs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		key := ""
		switch {
		case name == "index.json":
			key = name
		case strings.HasPrefix(name, "blobs/sha256/") && hdr.Size <= maxMetadataBlob:
			key = "sha256:" + strings.TrimPrefix(name, "blobs/sha256/")
		default:
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", archive, name, err)
		}
		var probe json.RawMessage
		if json.Unmarshal(data, &probe) == nil {
			blobs[key] = data
		}
	}
}
