package migratecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/internal/migrate"
)

// ErrPartial is returned when something could not be translated and the
// caller did not allow a partial result.
var ErrPartial = errors.New("some MetalLB configuration could not be translated (see the report); rerun with --allow-partial to accept the result")

// RunOptions are the arguments of kubectl herald migrate.
type RunOptions struct {
	// Files are files or directories of MetalLB YAML ("-": standard
	// input); empty: read the cluster.
	Files []string
	// Plan prints the takeover script instead of the configuration.
	Plan         bool
	AllowPartial bool
	// HeraldNamespace is Herald's namespace.
	HeraldNamespace string
	// ConfigFile is the name the plan applies the configuration from.
	ConfigFile string
	Stdin      io.Reader
	Out, Err   io.Writer
	// Clients are needed without Files, and for Plan.
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Run converts (or plans) and writes the Herald YAML or the script to Out
// and the report to Err. A lossy conversion returns ErrPartial unless
// AllowPartial, after writing everything.
func Run(ctx context.Context, o RunOptions) error {
	var src *migrate.Source
	var err error
	if len(o.Files) > 0 {
		src, err = readFiles(o.Files, o.Stdin)
	} else {
		if o.Dynamic == nil {
			return fmt.Errorf("no cluster to read: give -f, or a kubeconfig")
		}
		src, err = ReadCluster(ctx, o.Dynamic)
	}
	if err != nil {
		return err
	}
	res := migrate.Convert(src, migrate.Options{HeraldNamespace: o.HeraldNamespace})
	if err := res.Report.Write(o.Err); err != nil {
		return err
	}
	if o.Plan {
		if o.Kube == nil || o.Dynamic == nil {
			return fmt.Errorf("--plan reads the cluster: it needs a kubeconfig")
		}
		inv, err := ReadInventory(ctx, o.Kube, o.Dynamic)
		if err != nil {
			return err
		}
		steps := migrate.Plan(inv, migrate.PlanOptions{ConfigFile: o.ConfigFile, HeraldNamespace: o.HeraldNamespace, Secrets: res.Report.Secrets})
		if err := migrate.WriteScript(o.Out, steps); err != nil {
			return err
		}
	} else if err := migrate.WriteYAML(o.Out, res.Objects); err != nil {
		return err
	}
	if res.Report.Lossy() && !o.AllowPartial {
		return ErrPartial
	}
	return nil
}

// readFiles reads YAML files, directories of them (.yaml, .yml, .json, in
// name order, recursively) and "-" for standard input.
func readFiles(paths []string, stdin io.Reader) (*migrate.Source, error) {
	src := &migrate.Source{}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, err
			}
			if err := src.AddYAML("standard input", data); err != nil {
				return nil, err
			}
			continue
		}
		var files []string
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(path))
			if !d.IsDir() && (path == p || ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if err := src.AddYAML(f, data); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}
