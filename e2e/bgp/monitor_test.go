package bgp

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// routeMonitor records the router's kernel route changes with their
// times (`ip -ts -o monitor route` in the router namespace): when FRR
// installed a route in the FIB and when it took it out, to the
// microsecond and without polling.
type routeMonitor struct {
	proc   *lab.Process
	offset int64
	rest   []byte
	events []routeEvent
}

// routeEvent is one line of the monitor.
type routeEvent struct {
	At      time.Time
	Deleted bool
	Prefix  netip.Prefix
}

// startRouteMonitor starts the monitor for the rest of the test.
func startRouteMonitor(t testing.TB, l *lab.Lab) *routeMonitor {
	t.Helper()
	name := fmt.Sprintf("route-monitor-%d", time.Now().UnixNano())
	p, err := l.Start(lab.Router, name, []string{"ip", "-ts", "-o", "monitor", "route"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return &routeMonitor{proc: p}
}

// read parses what the monitor wrote since the last read.
func (m *routeMonitor) read(t testing.TB) {
	t.Helper()
	f, err := os.Open(m.proc.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(m.offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	m.offset += int64(len(data))
	data = append(m.rest, data...)
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		m.rest = data
		return
	}
	m.rest = append([]byte(nil), data[last+1:]...)
	for _, line := range strings.Split(string(data[:last]), "\n") {
		if ev, ok := parseRouteEvent(line); ok {
			m.events = append(m.events, ev)
		}
	}
}

// parseRouteEvent parses
//
//	[2026-11-29T13:46:13.876560] 2001:db8:ff:: nhid 25 proto bgp metric 20 ...
//	[2026-11-29T13:46:13.968323] Deleted 198.51.100.144/28 nhid 25 proto bgp ...
func parseRouteEvent(line string) (routeEvent, bool) {
	var ev routeEvent
	ts, rest, ok := strings.Cut(strings.TrimPrefix(line, "["), "] ")
	if !ok {
		return ev, false
	}
	at, err := time.ParseInLocation("2006-01-02T15:04:05.000000", ts, time.Local)
	if err != nil {
		return ev, false
	}
	f := strings.Fields(rest)
	if len(f) > 0 && f[0] == "Deleted" {
		ev.Deleted, f = true, f[1:]
	}
	if len(f) == 0 {
		return ev, false
	}
	if ev.Prefix, err = netip.ParsePrefix(f[0]); err != nil {
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			return ev, false
		}
		ev.Prefix = host(a)
	}
	ev.At = at
	return ev, true
}

// wait returns the time of the first event for prefix (added, or deleted)
// at or after since, polling the monitor's output every 2 ms.
func (m *routeMonitor) wait(t testing.TB, prefix netip.Prefix, deleted bool, since time.Time, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m.read(t)
		for _, ev := range m.events {
			if ev.Prefix == prefix && ev.Deleted == deleted && !ev.At.Before(since) {
				return ev.At
			}
		}
		if time.Now().After(deadline) {
			what := "installed"
			if deleted {
				what = "removed"
			}
			t.Fatalf("the router's FIB: %s not %s within %s", prefix, what, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
