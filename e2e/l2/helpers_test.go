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

func waitCondition(t testing.TB, l *lab.Lab, name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	poll(t, fmt.Sprintf("%s condition %s=%s/%s", name, typ, status, reason), 30*time.Second, func() bool {
		s, err := l.Client().CoreV1().Services(testNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cc := range s.Status.Conditions {
			if cc.Type == typ && cc.Status == status && cc.Reason == reason {
				c = cc
				return true
			}
		}
		return false
	})
	return c
}

func waitEvent(t testing.TB, l *lab.Lab, name, reason string, fragments ...string) {
	t.Helper()
	poll(t, fmt.Sprintf("event %s on %s", reason, name), 30*time.Second, func() bool {
		evs, err := l.Client().CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Reason != reason {
				continue
			}
			ok := true
			for _, f := range fragments {
				ok = ok && strings.Contains(ev.Message, f)
			}
			if ok {
				return true
			}
		}
		return false
	})
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
