package l2

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// scrape reads a Prometheus text endpoint into "name{labels}" -> value.
func scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	out, err := lab.ScrapeMetrics(addr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scrapeOK is scrape for a process that may not be listening yet (empty
// when it is not).
func scrapeOK(addr string) map[string]float64 {
	out, _ := lab.ScrapeMetrics(addr)
	return out
}

// TestMetricsFollowTheSystem scrapes the controller and the speakers and
// checks the figures move as Herald works.
func TestMetricsFollowTheSystem(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	scrapeController := func() map[string]float64 {
		m, err := h.ControllerMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := scrapeController()
	_, ips := suite.Service(t, "metrics", poolL2, nil, "node1")
	vip := ips[0]
	node := harness.Owner(t, l, vip)
	n, _ := l.Node(node)
	speaker := fmt.Sprintf("%s:7472", n.IPv4)

	labkit.Eventually(t, 20*time.Second, "controller metrics to move", func() bool {
		after := scrapeController()
		return after["herald_controller_allocations_total"] > before["herald_controller_allocations_total"] &&
			after[`herald_controller_pool_addresses_in_use{family="IPv4",pool="l2"}`] >= 1 &&
			after[`herald_controller_pool_addresses{family="IPv4",pool="l2"}`] == 16 &&
			after["herald_controller_leader"] == 1
	})
	s1 := scrape(t, speaker)
	if s1[`herald_speaker_announced{protocol="l2"}`] < 1 {
		t.Errorf("the owner's speaker reports %v L2 addresses", s1[`herald_speaker_announced{protocol="l2"}`])
	}
	if s1[`herald_speaker_members{state="alive"}`] != 3 {
		t.Errorf("members alive = %v, want 3", s1[`herald_speaker_members{state="alive"}`])
	}
	key := `herald_l2_requests_received_total{interface="eth0",protocol="arp"}`
	for i := 0; i < 3; i++ {
		if _, err := l.ARPProbe(context.Background(), vip); err != nil {
			t.Fatal(err)
		}
	}
	labkit.Eventually(t, 10*time.Second, "ARP request and reply counters to move", func() bool {
		s2 := scrape(t, speaker)
		return s2[key] >= s1[key]+3 &&
			s2[`herald_l2_responses_sent_total{interface="eth0",protocol="arp"}`] >= s1[`herald_l2_responses_sent_total{interface="eth0",protocol="arp"}`]+3
	})
	if s1[`herald_l2_gratuitous_sent_total{interface="eth0",protocol="arp"}`] < 1 {
		t.Error("no gratuitous ARP counted on the owner")
	}
	if _, ok := s1["herald_speaker_reconcile_duration_seconds_count"]; !ok {
		t.Error("no reconcile duration histogram")
	}
	// A Service change in a settled cluster is planned incrementally (its
	// addresses only); the first plan after the speaker started was a full
	// one. Each round relabels the Service: a Service change that moves
	// nothing, planned incrementally unless a change of the nodes,
	// liveness or configuration comes with it.
	plans := func(m map[string]float64, kind string) float64 {
		return m[fmt.Sprintf("herald_speaker_l2_plans_total{kind=%q}", kind)]
	}
	round := 0
	labkit.Eventually(t, 30*time.Second, "an incremental L2 plan on the owner", func() bool {
		m := scrape(t, speaker)
		if plans(m, "full") >= 1 && plans(m, "changed") > plans(s1, "changed") {
			return true
		}
		round++
		patch := fmt.Sprintf(`{"metadata":{"labels":{"herald-e2e-round":"%d"}}}`, round)
		if _, err := l.Client().CoreV1().Services(testNS).Patch(ctx, "metrics", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Logf("relabelling the Service: %v", err)
		}
		return false
	})
}
