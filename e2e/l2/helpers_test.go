package l2

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

type netipAddr = netip.Addr

// stableOwner checks that node alone answers for vip during an observation
// window: probes every 20 ms for the given time (a change that should move
// nothing is given that long to move something).
func stableOwner(t testing.TB, l *lab.Lab, vip netip.Addr, node string, window time.Duration) {
	t.Helper()
	mon, err := l.StartARPMonitor(vip, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = mon.Wait(context.Background(), start.Add(window), func(lab.Probe) bool { return true })
	probes, stopErr := mon.Stop()
	if err != nil || stopErr != nil {
		t.Fatal(err, stopErr)
	}
	for _, p := range probes.After(start) {
		if nodes := p.Nodes(); len(nodes) != 1 || nodes[0] != node {
			t.Fatalf("probe at %v answered by %v, want only %s", p.Sent.Sub(start).Round(time.Millisecond), nodes, node)
		}
	}
}

// waitCondition waits for a Service condition with reason, and returns it.
func waitCondition(t testing.TB, l *lab.Lab, name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	return l.WaitServiceCondition(t, testNS, name, typ, status, func(c metav1.Condition) bool { return c.Reason == reason })
}

// waitEvent waits for an event with reason on the Service name whose
// message contains every fragment.
func waitEvent(t testing.TB, l *lab.Lab, name, reason string, fragments ...string) {
	t.Helper()
	l.WaitEvent(t, time.Time{}, "Service", name, reason, fragments...)
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// waitAnnouncedByNewOwner waits until the Service holding vip says
// herald.dev/Announced True with vip answered by the node that took it
// over (as its speaker reports it), or, once the old owner's speaker (restarted by
// the kubelet, and first in rendezvous order) alone answers for it again,
// the old owner: a take-over that lasted less than a SpeakerStatus write
// interval is never reported, and need not be (seen in CI: the kubelet
// restarted a SIGTERMed speaker within 0.4 s).
func waitAnnouncedByNewOwner(t testing.TB, l *lab.Lab, vip netip.Addr, newOwner, oldOwner string) {
	t.Helper()
	labkit.Eventually(t, 30*time.Second, "Announced names "+newOwner+" (or "+oldOwner+", answering again) for "+vip.String(), func() bool {
		if announcedBy(t, l, vip, newOwner) {
			return true
		}
		a := harness.Probe(t, l, vip)
		return len(a) == 1 && a[0].Node == oldOwner && announcedBy(t, l, vip, oldOwner)
	})
}

// announcedBy: a Service's Announced condition says node answers for vip.
func announcedBy(t testing.TB, l *lab.Lab, vip netip.Addr, node string) bool {
	want := vip.String() + " answered by node " + node + " (L2"
	svcs, err := l.Client().CoreV1().Services(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, s := range svcs.Items {
		for _, c := range s.Status.Conditions {
			if c.Type == v1beta1.ConditionAnnounced && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want) {
				return true
			}
		}
	}
	return false
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// logLateAnswers logs, per node, how many ARP and NDP answers its speaker
// sent more than 10 ms (a probe interval) and 100 ms after the kernel
// received the request, since that speaker started
// (herald_l2_answer_delay_seconds). A gap in the probes with no late answer
// was the network's or the kernel's (the requests reached the speaker
// late, or not at all); one with late answers was the speaker not being
// scheduled.
func logLateAnswers(t testing.TB, l *lab.Lab, what string) {
	t.Helper()
	var parts []string
	for _, n := range l.Nodes() {
		m := scrapeOK(netip.AddrPortFrom(n.IPv4, 7472).String())
		var total, within10, within100 float64
		for k, v := range m {
			switch {
			case strings.HasPrefix(k, "herald_l2_answer_delay_seconds_count{"):
				total += v
			case strings.HasPrefix(k, "herald_l2_answer_delay_seconds_bucket{") && strings.Contains(k, `le="0.01"`):
				within10 += v
			case strings.HasPrefix(k, "herald_l2_answer_delay_seconds_bucket{") && strings.Contains(k, `le="0.1"`):
				within100 += v
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.0f answers, %.0f later than 10 ms (%.0f later than 100 ms)", n.Name, total, total-within10, total-within100))
	}
	t.Logf("%s: speakers' ARP and NDP answer delays since they started: %s", what, strings.Join(parts, "; "))
}
