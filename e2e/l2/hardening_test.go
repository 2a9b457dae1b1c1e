package l2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// capNetRaw is CAP_NET_RAW's bit in /proc/<pid>/status's capability sets.
const capNetRaw = 1 << 13

// TestSpeakerRunsWithOnlyNetRaw reads every running speaker's
// /proc/<pid>/status on its lab node: its effective, permitted and
// bounding capability sets are NET_RAW alone, it runs under a seccomp
// filter (the runtime's default profile) and cannot gain privileges. The
// other end-to-end tests, run from the same manifests, show it still
// answers ARP/NDP and speaks BGP (with TCP MD5) that way.
func TestSpeakerRunsWithOnlyNetRaw(t *testing.T) {
	l, h := suite.Herald(t)
	for _, n := range l.Nodes() {
		s, err := h.StartSpeaker(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := s.PID()
		if err != nil {
			t.Fatal(err)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		fields := procStatus(string(status))
		want := fmt.Sprintf("%016x", capNetRaw)
		for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
			if fields[set] != want {
				t.Errorf("%s: speaker (pid %d) %s %s, want %s (NET_RAW alone)", n.Name, pid, set, fields[set], want)
			}
		}
		if fields["CapAmb"] != "0000000000000000" {
			t.Errorf("%s: speaker CapAmb %s, want none", n.Name, fields["CapAmb"])
		}
		if fields["Seccomp"] != "2" {
			t.Errorf("%s: speaker Seccomp %q, want 2 (a filter: the RuntimeDefault profile)", n.Name, fields["Seccomp"])
		}
		if fields["NoNewPrivs"] != "1" {
			t.Errorf("%s: speaker NoNewPrivs %q, want 1 (allowPrivilegeEscalation: false)", n.Name, fields["NoNewPrivs"])
		}
		t.Logf("%s: speaker pid %d CapEff %s CapBnd %s Seccomp %s", n.Name, pid, fields["CapEff"], fields["CapBnd"], fields["Seccomp"])
	}
}

// procStatus splits /proc/<pid>/status into "Name" -> "value".
func procStatus(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestSpeakerEndpointsOnTheNodeAddressOnly: the speaker's metrics and
// health ports answer on the node's own address (status.hostIP, where the
// kubelet's probes go: the speakers being Ready shows they do) and refuse
// on the node's other local addresses, its loopback and its IPv6 address:
// in kube-proxy's IPVS mode every LoadBalancer address is local too.
func TestSpeakerEndpointsOnTheNodeAddressOnly(t *testing.T) {
	l, h := suite.Herald(t)
	if err := h.StartSpeakers(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range l.Nodes() {
		for _, port := range []uint16{7472, 7473} {
			open := netip.AddrPortFrom(n.IPv4, port)
			if err := connectFrom(ctx, l, n.Name, open); err != nil {
				t.Errorf("%s: %s refused on the node's own address: %v", n.Name, open, err)
			}
			for _, other := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback(), n.IPv6} {
				closed := netip.AddrPortFrom(other, port)
				// Refused (a reset from a local address with nothing
				// listening on the port), not some other failure.
				if err := connectFrom(ctx, l, n.Name, closed); err == nil || !strings.Contains(err.Error(), "Connection refused") {
					t.Errorf("%s: connecting to %s, another local address of the node: %v, want connection refused", n.Name, closed, err)
				}
			}
		}
	}
}

// connectFrom opens a TCP connection to addr from inside node's network
// namespace (bash's /dev/tcp) and closes it; an error when it is refused.
func connectFrom(ctx context.Context, l labNetwork, node string, addr netip.AddrPort) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(addr.String())
	host = strings.Trim(host, "[]")
	_, err := l.Exec(ctx, node, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port))
	return err
}

// labNetwork is the part of the lab connectFrom needs.
type labNetwork interface {
	Exec(ctx context.Context, host string, argv ...string) (string, error)
}
