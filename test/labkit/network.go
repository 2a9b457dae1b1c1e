package labkit

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Network is one test's lab: network namespaces named
// <prefix>-<test PID>-<hash of the test name>-<role>, a bridge namespace
// ("sw", with br0) and hosts plugged into it by an eth0 veth. Everything
// it creates is removed when the test ends, or earlier by Close: the
// processes it started (by PID, newest first), then the namespaces (by
// name, after stopping by PID whatever still runs in them).
type Network struct {
	t        testing.TB
	prefix   string
	bridge   string
	cleanups []func()
}

// Host says how AddHost plugs a namespace into the bridge.
type Host struct {
	// MAC of eth0 ("": the kernel picks one).
	MAC string
	// Port is the name of eth0's peer, a port of br0 in the bridge
	// namespace ("": the host's role).
	Port string
	// Addrs are prefixes put on eth0 (IPv6 ones without DAD).
	Addrs []string
	// DAD keeps IPv6 duplicate address detection on, as on a real node:
	// the link-local address is then tentative for a while. Off, every
	// address is usable at once.
	DAD bool
	// Sysctls are set in the namespace before eth0 exists, so that the
	// defaults reach it (net.ipv6.conf.all.keep_addr_on_down=1, ...).
	Sysctls []string
}

// NewNetwork checks that the lab's ranges are free in the root namespace
// (the test fails if not; a real-cluster lab's root leg does not count, as
// a Network never touches the root namespace), then creates the bridge
// namespace. Call Require first.
func NewNetwork(t testing.TB, prefix string) *Network {
	t.Helper()
	if err := CheckRootNamespace(context.Background(), true); err != nil {
		t.Fatalf("lab test refuses to start: %v", err)
	}
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	n := &Network{t: t, prefix: fmt.Sprintf("%s-%d-%08x", prefix, os.Getpid(), h.Sum32())}
	t.Cleanup(n.Close)
	n.bridge = n.AddNS("sw")
	n.IP(n.bridge, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
	n.IP(n.bridge, "link", "set", "br0", "up")
	return n
}

// Bridge is the name of the bridge namespace (br0 and the hosts' ports).
func (n *Network) Bridge() string { return n.bridge }

// NS is the name of the namespace of a role (whether it exists or not).
func (n *Network) NS(role string) string { return n.prefix + "-" + role }

// AddNS creates the namespace of role, with lo up, and returns its name.
func (n *Network) AddNS(role string) string {
	n.t.Helper()
	ns := n.NS(role)
	n.Run("ip", "netns", "add", ns)
	n.onClose(func() {
		if err := DeleteNS(context.Background(), ns); err != nil {
			n.t.Errorf("removing namespace: %v", err)
		}
	})
	n.IP(ns, "link", "set", "lo", "up")
	return ns
}

// AddHost creates the namespace of role and plugs it into the bridge by
// its eth0, configured as h says, and returns the namespace's name.
func (n *Network) AddHost(role string, h Host) string {
	n.t.Helper()
	ns := n.AddNS(role)
	sysctls := h.Sysctls
	if !h.DAD {
		sysctls = append([]string{"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"}, sysctls...)
	}
	if len(sysctls) > 0 {
		n.Sysctl(ns, sysctls...)
	}
	port := h.Port
	if port == "" {
		port = role
	}
	args := []string{"ip", "link", "add", "eth0", "netns", ns}
	if h.MAC != "" {
		args = append(args, "address", h.MAC)
	}
	n.Run(append(args, "type", "veth", "peer", "name", port, "netns", n.bridge)...)
	n.IP(n.bridge, "link", "set", "dev", port, "master", "br0", "up")
	for _, a := range h.Addrs {
		n.AddAddr(ns, a)
	}
	n.IP(ns, "link", "set", "eth0", "up")
	return ns
}

// AddAddr puts a prefix on eth0 of ns (an IPv6 one without DAD).
func (n *Network) AddAddr(ns, prefix string) {
	n.t.Helper()
	if strings.Contains(prefix, ":") {
		n.IP(ns, "-6", "addr", "add", prefix, "dev", "eth0", "nodad")
		return
	}
	n.IP(ns, "addr", "add", prefix, "dev", "eth0")
}

// Sysctl sets sysctls ("key=value") in ns.
func (n *Network) Sysctl(ns string, settings ...string) {
	n.t.Helper()
	n.Run(InNS(ns, append([]string{"sysctl", "-qw"}, settings...)...)...)
}

// IP runs "ip -n ns args..." and returns its output; an error fails the
// test.
func (n *Network) IP(ns string, args ...string) string {
	n.t.Helper()
	return n.Run(append([]string{"ip", "-n", ns}, args...)...)
}

// Run runs a command (in the root namespace: give it `ip -n` or InNS) and
// returns its output; an error fails the test.
func (n *Network) Run(argv ...string) string {
	n.t.Helper()
	return MustRun(n.t, argv...)
}

// Exec runs a command in ns and returns its output and error, for tools
// whose failure is an expected outcome (arping with no answer).
func (n *Network) Exec(ns string, argv ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...).CombinedOutput()
	return string(out), err
}

// Close removes what the network created, newest first: processes, then
// namespaces. A second call does nothing; the test's cleanup calls it.
func (n *Network) Close() {
	for i := len(n.cleanups) - 1; i >= 0; i-- {
		n.cleanups[i]()
	}
	n.cleanups = nil
}

func (n *Network) onClose(f func()) { n.cleanups = append(n.cleanups, f) }

// MustRun runs a command and returns its combined output; an error fails
// t with the command line and that output.
func MustRun(t testing.TB, argv ...string) string {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// Require skips t in -short mode, unless it runs as root, and unless every
// tool is installed (a name on PATH or an absolute path); ip is always
// needed. The skip message names the Debian packages.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab test: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("lab test: needs root (network namespaces, raw sockets); CI runs it as root")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("lab test: %s is not installed (Debian: iproute2, iputils-ping, iputils-arping, ndisc6, frr, bird2)", tool)
		}
	}
}
