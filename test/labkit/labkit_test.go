package labkit

import (
	"context"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestOverlapsRanges(t *testing.T) {
	for s, want := range map[string]bool{
		"198.51.100.0/24": true, "198.51.100.128/25": true, "198.51.100.7/32": true, "2001:db8:1::/64": true,
		"198.51.0.0/16": false, "0.0.0.0/0": false, "192.0.2.0/24": false, "203.0.113.0/24": false, "2001::/16": false, "fd00::/64": false,
	} {
		if got := OverlapsRanges(netip.MustParsePrefix(s)); got != want {
			t.Errorf("OverlapsRanges(%s) = %v", s, got)
		}
	}
	if p, ok := ParseRouteDst("198.51.100.5"); !ok || p.Bits() != 32 {
		t.Errorf("host route: %v %v", p, ok)
	}
	if _, ok := ParseRouteDst("default"); ok {
		t.Error("default route parsed as a prefix")
	}
	for dev, want := range map[string]bool{"herald1a2b": true, "heraldab": false, "herald1A2b": false, "eth0": false, "herald1a2b3": false} {
		if isRootLeg(dev) != want {
			t.Errorf("isRootLeg(%q) = %v", dev, !want)
		}
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(context.Background(), time.Second, "three calls", func() (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("Poll: %v after %d calls", err, n)
	}
	err := Poll(context.Background(), 50*time.Millisecond, "never", func() (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "waiting for never: not done after 50ms") {
		t.Fatalf("Poll past its deadline: %v", err)
	}
	n = 0
	if d := Eventually(t, time.Second, "two calls", func() bool { n++; return n == 2 }); d < eventuallyInterval {
		t.Errorf("Eventually returned %s for a condition true on the second call", d)
	}
}

// TestNetwork builds two hosts on the bridge, pings across, starts a
// process that outlives Close's polite stop, and checks that Close leaves
// no namespace and no process behind.
func TestNetwork(t *testing.T) {
	Require(t, "ping", "sleep")
	n := NewNetwork(t, "hlk")
	a := n.AddHost("a", Host{MAC: "02:00:00:00:00:0a", Addrs: []string{"198.51.100.1/24", "2001:db8:1::1/64"}})
	b := n.AddHost("b", Host{Addrs: []string{"198.51.100.2/24", "2001:db8:1::2/64"}, Sysctls: []string{"net.ipv6.conf.all.keep_addr_on_down=1"}})
	for _, dst := range []string{"198.51.100.2", "2001:db8:1::2"} {
		if out, err := n.Exec(a, "ping", "-c", "1", "-W", "2", dst); err != nil {
			t.Fatalf("ping %s: %v\n%s", dst, err, out)
		}
	}
	lines := make(chan string, 1)
	sleeper := n.Start(b, ProcessOptions{Name: "sleep", Argv: []string{"sh", "-c", "echo up; exec sleep 600"}, Grace: 100 * time.Millisecond,
		Stdout: func(r io.Reader) {
			bs, _ := io.ReadAll(io.LimitReader(r, 3))
			lines <- string(bs)
			_, _ = io.Copy(io.Discard, r)
		}})
	loose := n.Start(b, ProcessOptions{Argv: []string{"sleep", "600"}, Stdin: true})
	pid := loose.PID()
	read := <-lines
	n.Close()
	if read != "up\n" || !sleeper.Exited() || !loose.Exited() || !Gone(pid) {
		t.Errorf("after Close: stdout %q, exited %v %v, pid %d gone %v", read, sleeper.Exited(), loose.Exited(), pid, Gone(pid))
	}
	for _, ns := range []string{a, b, n.Bridge()} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
}
