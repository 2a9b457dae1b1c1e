package helm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/testenv"
)

// promAddr is where the test's Prometheus listens: the client's address,
// which reaches the speakers on the nodes' addresses and the controller
// on its pod address (through the router), and which the test reaches
// from the root namespace.
var promAddr = lab.ClientIPv4 + ":9090"

// monitoringCRDs are the Prometheus Operator CRDs the chart's
// metrics.serviceMonitor, podMonitor and prometheusRule objects need.
var monitoringCRDs = []string{"servicemonitors", "podmonitors", "prometheusrules"}

// checkMonitoring applies the chart's monitoring objects server-side
// against the Prometheus Operator's CRDs, then runs a real Prometheus that
// scrapes every speaker and controller with the chart's alert rules:
// every target up, Herald's metrics there, every rule evaluated without
// error, HeraldNoLeader inactive while a controller leads and pending
// once none is scraped.
func checkMonitoring(t *testing.T, h *deploy.Herald) {
	ctx := context.Background()
	start := time.Now()
	applyMonitoringObjects(t, h)
	rules := filepath.Join(t.TempDir(), "rules.json")
	spec, err := h.Kubectl(ctx, "get", "prometheusrule", "herald", "-n", deploy.Namespace, "-o", "jsonpath={.spec}")
	if err != nil {
		t.Fatal(err)
	}
	// spec.groups is a Prometheus rule file (JSON is YAML)
	if err := os.WriteFile(rules, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs := scrapeJobs(t, h)
	stop := startPrometheus(t, h.Lab, jobs, rules)
	defer stop()
	checkScraped(t, jobs)
	checkRules(t, "HeraldNoLeader", "inactive")
	t.Logf("monitoring objects applied, %d speakers and %d controllers scraped, the chart's rules evaluated in %v",
		len(jobs[0].targets), len(jobs[1].targets), time.Since(start).Round(100*time.Millisecond))
	noLeaderFires(t, h)
	t.Logf("monitoring checks took %v, the controller leading again", time.Since(start).Round(100*time.Millisecond))
}

// applyMonitoringObjects applies the operator's CRDs and the chart's
// ServiceMonitors, PodMonitors and PrometheusRule with server-side apply,
// and shows that the schema is enforced: a ServiceMonitor with a
// malformed scrape interval is refused.
func applyMonitoringObjects(t *testing.T, h *deploy.Herald) {
	ctx := context.Background()
	dir, err := testenv.PrometheusOperatorCRDs()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "--server-side", "--field-manager=herald-e2e"}
	var names []string
	for _, c := range monitoringCRDs {
		args = append(args, "-f", filepath.Join(dir, "monitoring.coreos.com_"+c+".yaml"))
		names = append(names, "crd/"+c+".monitoring.coreos.com")
	}
	if _, err := h.Kubectl(ctx, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = h.Kubectl(context.Background(), append([]string{"delete", "--ignore-not-found"}, names...)...)
	})
	if _, err := h.Kubectl(ctx, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)...); err != nil {
		t.Fatal(err)
	}
	objects, err := h.Helm(ctx, "template", deploy.HelmRelease, chartDir(t), "-n", deploy.Namespace,
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.podMonitor.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true", "--show-only", "templates/servicemonitor.yaml",
		"--show-only", "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(ctx, objects); err != nil {
		t.Fatalf("the chart's monitoring objects refused: %v", err)
	}
	got, err := h.Kubectl(ctx, "get", "servicemonitors,podmonitors,prometheusrules", "-n", deploy.Namespace, "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(got)); n != 5 {
		t.Errorf("monitoring objects in %s: %q, want 2 ServiceMonitors, 2 PodMonitors and a PrometheusRule", deploy.Namespace, got)
	}
	bad := strings.Replace(objects, "interval: 30s", "interval: thirty", 1)
	if err := h.Apply(ctx, bad); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("a ServiceMonitor with interval \"thirty\" applied (err %v), want it refused by the CRD's schema", err)
	}
}

// chartDir is charts/herald of this checkout.
func chartDir(t *testing.T) string {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "herald")
}

// scrapeJob is one Prometheus job of static targets, each with its node.
type scrapeJob struct {
	name    string
	targets map[string]string // host:port -> node
}

// scrapeJobs are the speakers' metrics endpoints (on their nodes'
// addresses, host network) and the controllers' (on their pod addresses),
// as the chart's ServiceMonitors select them through its headless
// Services.
func scrapeJobs(t *testing.T, h *deploy.Herald) []scrapeJob {
	ctx := context.Background()
	jobs := []scrapeJob{{name: "herald-speaker", targets: map[string]string{}}, {name: "herald-controller", targets: map[string]string{}}}
	for i, component := range []string{"speaker", "controller"} {
		pods, err := h.Pods(ctx, component)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Status.PodIP == "" {
				t.Fatalf("%s pod %s has no address", component, p.Name)
			}
			jobs[i].targets[fmt.Sprintf("%s:7472", p.Status.PodIP)] = p.Spec.NodeName
		}
	}
	if len(jobs[0].targets) != len(h.Lab.Nodes()) || len(jobs[1].targets) == 0 {
		t.Fatalf("scrape targets %v, want a speaker per node and a controller", jobs)
	}
	return jobs
}
