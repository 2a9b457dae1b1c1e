// Package logkeys checks that the product's log lines use only the keys
// docs/operations.md lists under "Log keys", one key per thing, and that
// the list names no key the code no longer uses.
package logkeys

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// argsFrom is, per logger method, the index of its first key-value argument.
var argsFrom = map[string]int{"Debug": 1, "Info": 1, "Warn": 1, "Error": 1, "With": 0, "Log": 3,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2}

// attrs are the slog constructors whose first argument is a key.
var attrs = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true}

func TestLogKeysDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	used := map[string]string{} // key -> one place it is logged
	for _, dir := range []string{"controller", "speaker", "kubectl-herald", "internal", "hack"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.HasPrefix(d.Name(), "zz_generated") || strings.Contains(path, "testdata") {
				return err
			}
			return collect(path, used)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Log keys")
	if !ok {
		t.Fatal(`docs/operations.md has no "### Log keys" section`)
	}
	table, _, _ = strings.Cut(table, "\n#")
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 {
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
				listed[m[1]] = true
			}
		}
	}
	if len(used) < 20 || len(listed) < 20 {
		t.Fatalf("found %d keys in the code and %d in the docs: the scan is broken", len(used), len(listed))
	}
	for _, k := range slices.Sorted(maps.Keys(used)) {
		if !listed[k] {
			t.Errorf("log key %q (%s) is not listed in docs/operations.md, Log keys: use the listed key for the same thing, or list it", k, used[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := used[k]; !ok {
			t.Errorf("docs/operations.md lists log key %q, which no code logs", k)
		}
	}
}

// collect adds the string-literal keys of path's slog calls to used.
func collect(path string, used map[string]string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return err
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		from, step := argsFrom[sel.Sel.Name], 2
		if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "slog" {
			if !attrs[sel.Sel.Name] {
				return true
			}
			from, step = 0, len(call.Args)+1 // the first argument only
		} else if _, ok := argsFrom[sel.Sel.Name]; !ok {
			return true
		}
		for i := from; i < len(call.Args); i += step {
			if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				k, _ := strconv.Unquote(lit.Value)
				used[k] = fset.Position(lit.Pos()).String()
			}
		}
		return true
	})
	return nil
}
