package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// HTTPMonitor is a labprobe httpmonitor process: one host requesting
// http://addr:port/ every interval on a new connection, each try logged.
// One long-lived process, not a process per request, so it costs the
// machine little.
type HTTPMonitor struct {
	proc *labkit.Process
}

// StartHTTPMonitor starts requesting addr:port from host (e.g. External)
// every interval, each request at most timeout long, for the rest of the
// test.
func (l *Lab) StartHTTPMonitor(t testing.TB, host string, addr netip.Addr, port int, interval, timeout time.Duration) *HTTPMonitor {
	t.Helper()
	url := "http://" + netip.AddrPortFrom(addr, uint16(port)).String() + "/"
	name := fmt.Sprintf("http-monitor-%s-%d", addr, time.Now().UnixNano())
	p, err := l.Start(host, name, []string{l.bin.labprobe, "httpmonitor", "-url", url,
		"-interval", interval.String(), "-timeout", timeout.String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return &HTTPMonitor{proc: p}
}

// Tries stops the monitor and returns every request it made, in order.
func (m *HTTPMonitor) Tries(t testing.TB) []probe.HTTPTry {
	t.Helper()
	_ = m.proc.Stop()
	f, err := os.Open(m.proc.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []probe.HTTPTry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var try probe.HTTPTry
		if json.Unmarshal(sc.Bytes(), &try) == nil && !try.Sent.IsZero() {
			out = append(out, try)
		}
	}
	return out
}
