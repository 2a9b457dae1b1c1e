package members

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFailureBetweenNamespaces runs three members as separate processes,
// each in its own network namespace joined by a bridge (198.51.100.0/24),
// and checks that the two others see a member Dead when its process is
// SIGKILLed, and when its link goes down; after the link comes back, all
// three see each other Alive again (the rejoin loop heals the partition).
func TestFailureBetweenNamespaces(t *testing.T) {
	skipWithoutLab(t)
	t.Run("sigkill", func(t *testing.T) {
		l := newLab(t, "k")
		start := time.Now()
		if err := l.helpers[2].Process.Kill(); err != nil {
			t.Fatal(err)
		}
		l.waitDead(t, start)
	})
	t.Run("link-down", func(t *testing.T) {
		l := newLab(t, "l")
		start := time.Now()
		l.run(t, "ip", "-n", l.sw, "link", "set", "p3", "down")
		l.waitDead(t, start)
		l.run(t, "ip", "-n", l.sw, "link", "set", "p3", "up")
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
	skipWithoutLab(b)
	failures := []struct {
		name string
		fail func(testing.TB, *lab)
	}{
		{"sigkill", func(tb testing.TB, l *lab) {
			if err := l.helpers[2].Process.Kill(); err != nil {
				tb.Fatal(err)
			}
		}},
		{"link-down", func(tb testing.TB, l *lab) { l.run(tb, "ip", "-n", l.sw, "link", "set", "p3", "down") }},
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
	defer l.close(b)
	time.Sleep(rand.N(2 * DefaultTiming().ProbeInterval))
	start := time.Now()
	fail(b, l)
	var d time.Duration
	for _, h := range l.names[:2] {
		waitFor(b, 10*time.Second, h+" to see node-3 dead", func() bool {
			return l.seen.get(h, "node-3").state == Dead
		})
		d = max(d, l.seen.get(h, "node-3").since.Sub(start))
	}
	return d
}

func skipWithoutLab(tb testing.TB) {
	if testing.Short() {
		tb.Skip("lab test: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		tb.Skip("lab test: needs root for network namespaces; CI runs it as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("lab test: ip is not installed (Debian: iproute2)")
	}
}

// lab is a switch namespace with a bridge and three node namespaces, each
// running a helper member, all removed by close or when the test ends.
type lab struct {
	prefix   string
	sw       string
	names    []string
	helpers  []*exec.Cmd
	seen     *observer
	cleanups []func(testing.TB)
}

func newLab(t testing.TB, tag string) *lab {
	l := &lab{prefix: fmt.Sprintf("hmb-%d-%s", os.Getpid(), tag), names: []string{"node-1", "node-2", "node-3"},
		seen: &observer{seen: map[string]map[string]observation{}}}
	t.Cleanup(func() { l.close(t) })
	l.sw = l.addNetns(t, "sw")
	l.run(t, "ip", "-n", l.sw, "link", "add", "br0", "type", "bridge")
	l.run(t, "ip", "-n", l.sw, "link", "set", "br0", "up")
	var addrs []string
	for i := range l.names {
		addrs = append(addrs, fmt.Sprintf("198.51.100.%d", 11+i))
	}
	for i, name := range l.names {
		ns := l.addNetns(t, fmt.Sprint(i+1))
		port := fmt.Sprintf("p%d", i+1)
		l.run(t, "ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", l.sw)
		l.run(t, "ip", "-n", l.sw, "link", "set", port, "master", "br0", "up")
		l.run(t, "ip", "-n", ns, "addr", "add", addrs[i]+"/24", "dev", "eth0")
		l.run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		l.run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		l.startHelper(t, ns, name, addrs[i], addrs)
	}
	l.waitAllAlive(t, 20*time.Second)
	return l
}

// addNetns creates a namespace named after the lab and deletes it (which
// also removes its links) when the test ends.
func (l *lab) addNetns(t testing.TB, suffix string) string {
	ns := l.prefix + "-" + suffix
	l.run(t, "ip", "netns", "add", ns)
	l.cleanups = append(l.cleanups, func(t testing.TB) {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	return ns
}

// close stops the helpers by PID and deletes the namespaces, newest first;
// a second call does nothing.
func (l *lab) close(t testing.TB) {
	for i := len(l.cleanups) - 1; i >= 0; i-- {
		l.cleanups[i](t)
	}
	l.cleanups = nil
}

// startHelper runs a member in ns (ip netns exec execs the test binary, so
// the PID is the helper's) and stops it by PID when the test ends.
func (l *lab) startHelper(t testing.TB, ns, name, addr string, join []string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, exe, "-test.run=^TestMembersHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, helperAddrEnv+"="+addr,
		helperJoinEnv+"="+strings.Join(join, ","), helperKeyEnv+"="+hex.EncodeToString(testKey()),
		helperRejoinEnv+"=1s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: stderr}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { l.seen.read(name, stdout); close(done) }()
	l.cleanups = append(l.cleanups, func(t testing.TB) {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", name, cmd.Stderr.(*lockedWriter).String())
		}
	})
	l.helpers = append(l.helpers, cmd)
}

func (l *lab) run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (l *lab) waitAllAlive(t testing.TB, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "every helper to see every node alive", func() bool {
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
		waitFor(t, 10*time.Second, h+" to see node-3 dead", func() bool {
			return l.seen.get(h, "node-3").state == Dead
		})
		t.Logf("%s saw node-3 dead %v after the failure", h, l.seen.get(h, "node-3").since.Sub(start).Round(time.Millisecond))
	}
}
