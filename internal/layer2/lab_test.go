package layer2

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The lab: a bridge namespace and host namespaces ("node1", "client", ...)
// each with an eth0 veth whose peer is a port of the bridge. Only
// 198.51.100.0/24 and 2001:db8::/32 are used, and only inside namespaces
// named hl2-<pid>-<test hash>-<role>, removed when the test ends.

const (
	macNode1  = "02:00:00:00:00:11"
	macNode2  = "02:00:00:00:00:12"
	macClient = "02:00:00:00:01:00"
)

type lab struct {
	t      testing.TB
	prefix string
	sw     string
}

// requireLab skips the test unless it runs as root with the tools it uses.
func requireLab(t testing.TB, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab test: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("lab test: needs root (network namespaces, raw sockets); CI runs it as root")
	}
	for _, tool := range append([]string{"ip", "ping"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("lab test: %s is not installed (Debian: iproute2, iputils-ping, iputils-arping, ndisc6)", tool)
		}
	}
}

// newLab creates the bridge namespace.
func newLab(t testing.TB, tools ...string) *lab {
	t.Helper()
	requireLab(t, tools...)
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	l := &lab{t: t, prefix: fmt.Sprintf("hl2-%d-%08x", os.Getpid(), h.Sum32())}
	l.sw = l.addNS("sw")
	l.ip(l.sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
	l.ip(l.sw, "link", "set", "br0", "up")
	return l
}

// addNS creates a namespace and removes it (and any process left in it)
// when the test ends.
func (l *lab) addNS(role string) string {
	ns := l.prefix + "-" + role
	l.run("ip", "netns", "add", ns)
	l.t.Cleanup(func() { l.removeNS(ns) })
	l.ip(ns, "link", "set", "lo", "up")
	return ns
}

func (l *lab) removeNS(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		l.t.Logf("removing namespace %s: %v: %s", ns, err, out)
	}
}

// addHost creates a host namespace plugged into the bridge by its eth0.
// With dad false, IPv6 duplicate address detection is off in it, so its
// addresses are usable at once.
func (l *lab) addHost(role, mac string, dad bool, addrs ...string) string {
	ns := l.addNS(role)
	if !dad {
		l.sysctl(ns, "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	}
	l.run("ip", "link", "add", "eth0", "netns", ns, "address", mac, "type", "veth", "peer", "name", role, "netns", l.sw)
	l.ip(l.sw, "link", "set", role, "master", "br0", "up")
	for _, a := range addrs {
		l.addAddr(ns, a)
	}
	l.ip(ns, "link", "set", "eth0", "up")
	return ns
}

func (l *lab) addAddr(ns, prefix string) {
	if strings.Contains(prefix, ":") {
		l.ip(ns, "-6", "addr", "add", prefix, "dev", "eth0", "nodad")
		return
	}
	l.ip(ns, "addr", "add", prefix, "dev", "eth0")
}

func (l *lab) sysctl(ns string, settings ...string) {
	l.run(append([]string{"ip", "netns", "exec", ns, "sysctl", "-qw"}, settings...)...)
}

// ip runs "ip -n ns args..." and fails the test on error.
func (l *lab) ip(ns string, args ...string) string {
	return l.run(append([]string{"ip", "-n", ns}, args...)...)
}

func (l *lab) run(args ...string) string {
	l.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exec runs a command in ns and returns its output and error, for tools
// whose failure is an expected outcome (arping with no answer).
func (l *lab) exec(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	return string(out), err
}

// background starts a command in ns and returns a function that waits for
// it; it is killed by PID if the test ends first.
func (l *lab) background(ns string, args ...string) (wait func()) {
	l.t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	l.t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return func() { <-done }
}

// neigh returns the client's neighbour entry for ip ("" when there is none).
func (l *lab) neigh(ns, ip string) string {
	fam := "-4"
	if strings.Contains(ip, ":") {
		fam = "-6"
	}
	return strings.TrimSpace(l.ip(ns, fam, "neigh", "show", ip, "dev", "eth0"))
}

// inFlight bounds how long after it was sent a frame reaches the client
// through the bridge. The forwarding runs in softirq context, which a busy
// machine defers to ksoftirqd; 100 ms is far above anything measured and
// far below the 1 s between two gratuitous packets of a burst.
const inFlight = 100 * time.Millisecond

// eventually polls cond every 20 ms until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
