package members

import (
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestFailureBetweenNamespaces runs three members as separate processes,
// each in its own network namespace joined by a bridge (198.51.100.0/24),
// and checks that the two others see a member Dead when its process is
// SIGKILLed, and when its link goes down; after the link comes back, all
// three see each other Alive again (the rejoin loop heals the partition).
func TestFailureBetweenNamespaces(t *testing.T) {
	labkit.Require(t)
	t.Run("sigkill", func(t *testing.T) {
		l := newLab(t, "k")
		start := time.Now()
		if err := l.helpers[2].Kill(); err != nil {
			t.Fatal(err)
		}
		l.waitDead(t, start)
	})
	t.Run("link-down", func(t *testing.T) {
		l := newLab(t, "l")
		start := time.Now()
		l.IP(l.Bridge(), "link", "set", "p3", "down")
		l.waitDead(t, start)
		l.IP(l.Bridge(), "link", "set", "p3", "up")
		healed := time.Now()
		l.waitAllAlive(t, 30*time.Second)
		t.Logf("all alive again %v after the link came back", time.Since(healed).Round(time.Millisecond))
	})
}

// BenchmarkDetectBetweenNamespaces measures, over 20 fresh labs each, the
// time from SIGKILL of a member's process, or from its link going down,
// until both others see it Dead. Needs root; run it with:
// go test -run XXX -bench DetectBetweenNamespaces ./internal/members/
func BenchmarkDetectBetweenNamespaces(b *testing.B) {
	labkit.Require(b)
	failures := []struct {
		name string
		fail func(testing.TB, *lab)
	}{
		{"sigkill", func(tb testing.TB, l *lab) {
			if err := l.helpers[2].Kill(); err != nil {
				tb.Fatal(err)
			}
		}},
		{"link-down", func(tb testing.TB, l *lab) { l.IP(l.Bridge(), "link", "set", "p3", "down") }},
	}
	for _, f := range failures {
		b.Run(f.name, func(b *testing.B) {
			var all []time.Duration
			for i := range detectTrials {
				all = append(all, detectInLab(b, fmt.Sprintf("b%d", i), f.fail))
			}
			reportDurations(b, "all survivors", all)
			b.ReportMetric(ms(percentile(all, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(all, 99)), "p99-ms")
		})
	}
}

// detectInLab builds a lab, fails node-3 at a random phase of the probe
// schedule and returns when the last survivor recorded it Dead. The lab is
// torn down before it returns.
func detectInLab(b *testing.B, tag string, fail func(testing.TB, *lab)) time.Duration {
	l := newLab(b, tag)
	defer l.Close()
	time.Sleep(rand.N(2 * DefaultTiming().ProbeInterval))
	start := time.Now()
	fail(b, l)
	var d time.Duration
	for _, h := range l.names[:2] {
		labkit.Eventually(b, 10*time.Second, h+" to see node-3 dead", func() bool {
			return l.seen.get(h, "node-3").state == Dead
		})
		d = max(d, l.seen.get(h, "node-3").since.Sub(start))
	}
	return d
}

// lab is a labkit.Network with three node namespaces on its bridge, each
// running a helper member, all removed by Close or when the test ends.
type lab struct {
	*labkit.Network
	names   []string
	helpers []*labkit.Process
	seen    *observer
}

func newLab(t testing.TB, tag string) *lab {
	l := &lab{Network: labkit.NewNetwork(t, "hmb"+tag), names: []string{"node-1", "node-2", "node-3"},
		seen: &observer{seen: map[string]map[string]observation{}}}
	var addrs []string
	for i := range l.names {
		addrs = append(addrs, fmt.Sprintf("198.51.100.%d", 11+i))
	}
	for i, name := range l.names {
		ns := l.AddHost(fmt.Sprint(i+1), labkit.Host{Port: fmt.Sprintf("p%d", i+1), DAD: true, Addrs: []string{addrs[i] + "/24"}})
		l.startHelper(t, ns, name, addrs[i], addrs)
	}
	l.waitAllAlive(t, 20*time.Second)
	return l
}

// startHelper runs a member in ns; it is killed by PID (its stdin closed
// first) when the lab closes.
func (l *lab) startHelper(t testing.TB, ns, name, addr string, join []string) {
	argv, err := labkit.TestBinary("TestMembersHelperProcess")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{helperEnv + "=" + name, helperAddrEnv + "=" + addr,
		helperJoinEnv + "=" + strings.Join(join, ","), helperKeyEnv + "=" + hex.EncodeToString(testKey()),
		helperRejoinEnv + "=1s"}
	p := l.Start(ns, labkit.ProcessOptions{Name: name, Argv: argv, Env: env, Stdin: true,
		Stdout: func(r io.Reader) { l.seen.read(name, r) }})
	l.helpers = append(l.helpers, p)
}

func (l *lab) waitAllAlive(t testing.TB, timeout time.Duration) {
	t.Helper()
	labkit.Eventually(t, timeout, "every helper to see every node alive", func() bool {
		for _, h := range l.names {
			for _, n := range l.names {
				if l.seen.get(h, n).state != Alive {
					return false
				}
			}
		}
		return true
	})
}

// waitDead waits until node-1 and node-2 see node-3 Dead and logs how long
// after start each one recorded it.
func (l *lab) waitDead(t testing.TB, start time.Time) {
	t.Helper()
	for _, h := range l.names[:2] {
		labkit.Eventually(t, 10*time.Second, h+" to see node-3 dead", func() bool {
			return l.seen.get(h, "node-3").state == Dead
		})
		t.Logf("%s saw node-3 dead %v after the failure", h, l.seen.get(h, "node-3").since.Sub(start).Round(time.Millisecond))
	}
}
