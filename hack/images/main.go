// Command images builds Herald's container images as OCI image tarballs,
// without a container engine: each image is one static binary on an empty
// base, run as a non-root user, with the binary as entrypoint. The
// tarballs load with `docker load -i` or `kind load image-archive`.
//
// Usage: go run ./hack/images -out bin/images -tag v0.1.0
// (make images builds the static binaries first and calls it).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "bin/images", "directory for the tarballs")
	binDir := flag.String("bin", "bin/static", "directory holding the static controller and speaker binaries")
	repo := flag.String("repo", "ghcr.io/herald-lb", "image repository")
	tag := flag.String("tag", "v0.1.0", "image tag")
	user := flag.String("user", NonRootUser, "user the entrypoint runs as (uid:gid)")
	source := flag.String("source", HeraldSource, "org.opencontainers.image.source label")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	for _, name := range []string{"controller", "speaker"} {
		ref := fmt.Sprintf("%s/%s:%s", *repo, name, *tag)
		path := filepath.Join(*out, name+".tar")
		if err := BuildWith(filepath.Join(*binDir, name), ref, path, Config{User: *user, Source: *source}); err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Printf("%s -> %s\n", ref, path)
	}
}
