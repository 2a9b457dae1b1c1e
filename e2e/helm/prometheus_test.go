package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

// promConfig is a Prometheus configuration scraping jobs every second
// and evaluating the rule file as often, so that a test sees a change in
// seconds.
func promConfig(jobs []scrapeJob, rules string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\nrule_files: [%q]\nscrape_configs:\n", rules)
	for _, j := range jobs {
		fmt.Fprintf(&b, "  - job_name: %s\n    static_configs:\n", j.name)
		targets := make([]string, 0, len(j.targets))
		for target := range j.targets {
			targets = append(targets, target)
		}
		slices.Sort(targets)
		for _, target := range targets {
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {node: %q}\n", target, j.targets[target])
		}
	}
	return b.String()
}

// startPrometheus runs the pinned Prometheus server (hack/build-programs.sh)
// in the client's namespace and returns a function stopping it; its log is
// shown if the test fails.
func startPrometheus(t *testing.T, l *lab.Lab, jobs []scrapeJob, rules string) (stop func()) {
	bin, err := testenv.Tool("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(promConfig(jobs, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := l.Start(lab.Client, "prometheus", []string{bin, "--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + promAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		if err := p.Stop(); err != nil {
			t.Logf("stopping prometheus: %v", err)
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(l.Dir(), "logs", "prometheus.log"))
			t.Logf("prometheus log:\n%s", tail(string(out), 40))
		}
	})
	return stop
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// promGet reads a Prometheus HTTP API path into out's data.
func promGet(path string, query url.Values, out any) error {
	resp, err := http.Get("http://" + promAddr + path + "?" + query.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", path, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// sample is an instant vector's element.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promQuery evaluates an instant query.
func promQuery(q string) ([]sample, error) {
	var data struct {
		Result []sample `json:"result"`
	}
	err := promGet("/api/v1/query", url.Values{"query": {q}}, &data)
	return data.Result, err
}

// checkScraped waits until Prometheus has every target up and holds
// Herald's own series, from every speaker and every controller.
func checkScraped(t *testing.T, jobs []scrapeJob) {
	t.Helper()
	speakers, controllers := len(jobs[0].targets), len(jobs[1].targets)
	// query -> how many series it must return (0: at least one)
	queries := map[string]int{
		"up == 1":                            speakers + controllers,
		"herald_speaker_status_writes_total": speakers,
		"herald_speaker_reconcile_duration_seconds_count": speakers,
		"herald_speaker_members":                          0,
		"herald_speaker_announced":                        0,
		"herald_controller_leader":                        controllers,
		"herald_controller_leader == 1":                   1,
		"herald_controller_allocations_total":             0,
		"herald_controller_pool_addresses":                0,
	}
	last := map[string]string{}
	labkit.EventuallyWhy(t, time.Minute, "every target up and Herald's series scraped", func() (bool, string) {
		for q, want := range queries {
			got, err := promQuery(q)
			switch {
			case err != nil:
				last[q] = err.Error()
			case want > 0 && len(got) != want, want == 0 && len(got) == 0:
				last[q] = fmt.Sprintf("%d series, want %d (0: any)", len(got), want)
			default:
				delete(last, q)
			}
		}
		return len(last) == 0, fmt.Sprint(last)
	})
}

// rule is an alerting or recording rule as the rules API reports it.
type rule struct {
	Name           string    `json:"name"`
	State          string    `json:"state"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// promRules lists every rule Prometheus loaded.
func promRules() ([]rule, error) {
	var data struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := promGet("/api/v1/rules", url.Values{}, &data); err != nil {
		return nil, err
	}
	var out []rule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// checkRules waits until every rule of the chart has been evaluated with
// health ok and no error, and alert is in state (inactive, pending or
// firing).
func checkRules(t *testing.T, alert, state string) {
	t.Helper()
	labkit.EventuallyWhy(t, time.Minute, fmt.Sprintf("every rule evaluated without error, %s %s", alert, state), func() (bool, string) {
		rules, err := promRules()
		if err != nil {
			return false, err.Error()
		}
		why := rulesWrong(rules, alert, state)
		return why == "", why
	})
}

// rulesWrong says what keeps rules from being the chart's alerts, every
// one evaluated with health ok, with alert in state; "" when nothing does.
func rulesWrong(rules []rule, alert, state string) string {
	if len(rules) < 9 {
		return fmt.Sprintf("%d rules loaded, want the chart's 9", len(rules))
	}
	found := false
	for _, r := range rules {
		if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() {
			return fmt.Sprintf("rule %s: health %q, last error %q, last evaluation %v", r.Name, r.Health, r.LastError, r.LastEvaluation)
		}
		if r.Name == alert {
			found = true
			if r.State != state {
				return fmt.Sprintf("%s is %s, want %s", alert, r.State, state)
			}
		}
	}
	if !found {
		return alert + " not loaded"
	}
	return ""
}

// noLeaderFires scales the controller to zero: with no controller scraped
// HeraldNoLeader turns pending (its for: is 2 minutes); then the
// controller is scaled back and leads again.
func noLeaderFires(t *testing.T, h *deploy.Herald) {
	ctx := context.Background()
	replicas, err := h.Kubectl(ctx, "get", "deployment", deploy.ControllerDeployment, "-n", deploy.Namespace, "-o", "jsonpath={.spec.replicas}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Kubectl(ctx, "scale", "deployment", deploy.ControllerDeployment, "-n", deploy.Namespace, "--replicas=0"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := h.Kubectl(ctx, "scale", "deployment", deploy.ControllerDeployment, "-n", deploy.Namespace, "--replicas="+replicas); err != nil {
			t.Fatal(err)
		}
		if _, err := h.WaitLeader(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}()
	start := time.Now()
	checkRules(t, "HeraldNoLeader", "pending")
	t.Logf("HeraldNoLeader pending %v after the controller was scaled to 0", time.Since(start).Round(100*time.Millisecond))
}
