package lab

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// RouteMonitor records the router's kernel route changes with their
// times (`ip -ts -o monitor route` in the router namespace): when FRR
// installed a route in the FIB and when it took it out, to the
// microsecond and without polling.
type RouteMonitor struct {
	proc   *labkit.Process
	offset int64
	rest   []byte
	events []RouteEvent
}

// RouteEvent is one line of the monitor.
type RouteEvent struct {
	At      time.Time
	Deleted bool
	Prefix  netip.Prefix
}

// StartRouteMonitor starts the monitor for the rest of the test.
func StartRouteMonitor(t testing.TB, l *Lab) *RouteMonitor {
	t.Helper()
	name := fmt.Sprintf("route-monitor-%d", time.Now().UnixNano())
	p, err := l.Start(Router, name, []string{"ip", "-ts", "-o", "monitor", "route"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return &RouteMonitor{proc: p}
}

// read parses what the monitor wrote since the last read.
func (m *RouteMonitor) read(t testing.TB) {
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
func parseRouteEvent(line string) (RouteEvent, bool) {
	var ev RouteEvent
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
		ev.Prefix = HostPrefix(a)
	}
	ev.At = at
	return ev, true
}

// Wait returns the time of the first event for prefix (added, or deleted)
// at or after since, polling the monitor's output every 2 ms.
func (m *RouteMonitor) Wait(t testing.TB, prefix netip.Prefix, deleted bool, since time.Time, timeout time.Duration) time.Time {
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

// Events returns every route change seen so far, in order.
func (m *RouteMonitor) Events(t testing.TB) []RouteEvent {
	t.Helper()
	m.read(t)
	return slices.Clone(m.events)
}

// HostPrefix is the /32 or /128 of a.
func HostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
