package chart

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestAlertsFire runs promtool's checks of the rule file and its unit
// tests, and checks that every alert has a test case that fires it.
func TestAlertsFire(t *testing.T) {
	promtool := tool(t, "promtool")
	run(t, promtool, "check", "rules", "charts/herald/files/prometheus-rules.yaml")
	run(t, promtool, "test", "rules", "hack/chart/testdata/rules_test.yaml")
	tests := readYAML(t, "hack/chart/testdata/rules_test.yaml")
	fired := map[string]bool{}
	for _, tc := range tests["tests"].([]any) {
		for _, a := range tc.(map[string]any)["alert_rule_test"].([]any) {
			a := a.(map[string]any)
			if exp, _ := a["exp_alerts"].([]any); len(exp) > 0 {
				fired[a["alertname"].(string)] = true
			}
		}
	}
	for _, alert := range alerts(t) {
		if !fired[alert.name] {
			t.Errorf("alert %s has no promtool case in which it fires", alert.name)
		}
	}
}

type alert struct{ name, expr string }

func alerts(t *testing.T) []alert {
	var out []alert
	for _, g := range readYAML(t, "charts/herald/files/prometheus-rules.yaml")["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			out = append(out, alert{name: r["alert"].(string), expr: r["expr"].(string)})
		}
	}
	return out
}

func readYAML(t *testing.T, rel string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

// grafanaVars are the dashboard's variables, replaced by what Grafana
// would put there before the queries are checked.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")

func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "herald", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, grafanaVars.Replace(tg.Expr))
		}
	}
	if len(out) < 10 {
		t.Fatalf("dashboard has only %d queries", len(out))
	}
	return out
}

// TestDashboardQueriesParse has promtool parse every dashboard query (as
// recording rules of a scratch rule file).
func TestDashboardQueriesParse(t *testing.T) {
	var rules []map[string]string
	for i, e := range dashboardExprs(t) {
		rules = append(rules, map[string]string{"record": "herald:dashboard:" + strconv.Itoa(i), "expr": e})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, tool(t, "promtool"), "check", "rules", path)
	if !strings.Contains(out, "SUCCESS: "+strconv.Itoa(len(rules))+" rules found") {
		t.Errorf("promtool check rules:\n%s", out)
	}
}

var metricName = regexp.MustCompile(`\bherald_[a-z0-9_]+\b`)

// TestQueriedMetricsAreExported: every herald_* metric an alert or a
// dashboard query names is one the code registers.
func TestQueriedMetricsAreExported(t *testing.T) {
	exported := exportedMetrics(t)
	if len(exported) < 15 {
		t.Fatalf("found only %d exported metrics in the code: %v", len(exported), sortedKeys(exported))
	}
	queries := dashboardExprs(t)
	for _, a := range alerts(t) {
		queries = append(queries, a.expr)
	}
	for _, q := range queries {
		for _, m := range metricName.FindAllString(q, -1) {
			if !exported[m] {
				t.Errorf("query %q names %s, which the code does not export", q, m)
			}
		}
	}
}

// exportedMetrics reads the metric names the code registers from its
// source: client_golang *Opts literals (Namespace, Subsystem, Name joined
// by "_"; histograms add _bucket, _sum and _count) and prometheus.NewDesc
// calls with a literal name.
func exportedMetrics(t *testing.T) map[string]bool {
	root := repoRoot(t)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "controller", "speaker"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				inspectFunc(decl, names)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// inspectFunc adds the metric names registered in one declaration. A
// name given to a helper closure (layer2's counter("requests_received_total",
// ...) building CounterOpts{..., Name: name}) joins the Opts' prefix with
// each string literal passed as first argument to a call in the same
// function.
func inspectFunc(decl ast.Decl, names map[string]bool) {
	var prefixes, firstArgs []string
	ast.Inspect(decl, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if prefix := addOpts(n, names); prefix != "" {
				prefixes = append(prefixes, prefix)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewDesc" && len(n.Args) > 0 {
				if s, ok := stringLit(n.Args[0]); ok {
					names[s] = true
				}
			}
			if _, ok := n.Fun.(*ast.Ident); ok && len(n.Args) > 0 {
				if s, ok := stringLit(n.Args[0]); ok {
					firstArgs = append(firstArgs, s)
				}
			}
		}
		return true
	})
	for _, p := range prefixes {
		for _, a := range firstArgs {
			names[p+"_"+a] = true
		}
	}
}

// addOpts adds the name of a client_golang *Opts literal; when its Name is
// not a literal it returns the literal Namespace_Subsystem prefix instead.
func addOpts(lit *ast.CompositeLit, names map[string]bool) string {
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
		return ""
	}
	fields := map[string]string{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		if s, ok := stringLit(kv.Value); ok && key != nil {
			fields[key.Name] = s
		}
	}
	if fields["Name"] == "" {
		if fields["Namespace"] != "" && fields["Subsystem"] != "" {
			return fields["Namespace"] + "_" + fields["Subsystem"]
		}
		return ""
	}
	var parts []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if fields[k] != "" {
			parts = append(parts, fields[k])
		}
	}
	name := strings.Join(parts, "_")
	names[name] = true
	if sel.Sel.Name == "HistogramOpts" {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			names[name+s] = true
		}
	}
	return ""
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// sortedKeys is for failure messages.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
