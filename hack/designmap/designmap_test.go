// Package designmap checks that docs/design.md's table of packages names
// every package under internal/ and test/, so that the map a newcomer
// reads first has no blank spots.
package designmap

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDesignNamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	design, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"internal", "test"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !hasPackage(t, path) {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if name := "`" + filepath.ToSlash(rel) + "`"; !strings.Contains(string(design), name) {
				t.Errorf("docs/design.md does not name package %s", name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hasPackage: dir holds a Go file that is not a test.
func hasPackage(t *testing.T, dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
