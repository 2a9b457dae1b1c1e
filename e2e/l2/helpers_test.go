package l2

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
