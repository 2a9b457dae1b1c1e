package layer2

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-lb/herald/test/labkit"
)

// Lab tests run the code under test inside a node namespace by re-executing
// the test binary there (ip netns exec <ns> <test binary>
// -test.run=^TestHelperProcess$): every socket, netlink subscription and
// goroutine of that process lives in the namespace. The parent talks to it
// with one-line commands on stdin; replies and observed frames come back on
// stdout prefixed with "L2H ".

const helperEnv = "HERALD_L2_HELPER"

// TestHelperProcess is not a test: it is the body of the helper processes.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "announcer":
		runAnnouncerHelper()
	case "client":
		runClientHelper()
	}
	os.Exit(0)
}

// helperOut serialises the helper's stdout lines.
type helperOut struct{ mu sync.Mutex }

func (o *helperOut) printf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Printf("L2H "+format+"\n", args...)
}

func runAnnouncerHelper() {
	// Debug logs every packet; HERALD_L2_LOG=info keeps the read loops
	// free of a write per packet, for tests that time them.
	level := slog.LevelDebug
	if os.Getenv("HERALD_L2_LOG") == "info" {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var g GratuitousConfig
	if s := os.Getenv("HERALD_L2_GRAT"); s != "" {
		n, d, _ := strings.Cut(s, "/")
		g.Count, _ = strconv.Atoi(n)
		g.Interval, _ = time.ParseDuration(d)
	}
	reg := prometheus.NewRegistry()
	var out helperOut
	onYield := func(vip netip.Addr, iface string, by net.HardwareAddr) {
		out.printf("yield %s %s %s %d", vip, iface, by, time.Now().UnixNano())
	}
	onConflict := func(vip netip.Addr, iface string, by net.HardwareAddr, won bool) {
		out.printf("conflict %s %s %s %v", vip, iface, by, won)
	}
	// The periodic refresh is off unless asked for: the other lab tests
	// count gratuitous packets.
	refresh := time.Duration(-1)
	if v := os.Getenv("HERALD_L2_REFRESH"); v != "" {
		refresh, _ = time.ParseDuration(v)
	}
	settle, _ := time.ParseDuration(os.Getenv("HERALD_L2_SETTLE"))
	a, err := New(Config{Logger: log, Registerer: reg, Gratuitous: g, OnYield: onYield, OnConflict: onConflict, Refresh: refresh, FenceSettle: settle})
	if err != nil {
		log.Error("new", "error", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "set":
			want := parseAnnouncements(f[1:])
			t0 := time.Now().UnixNano()
			a.SetAnnouncements(want)
			t1 := time.Now().UnixNano()
			out.printf("ok %d %d %d", t0, t1, answersSent(reg))
		case "ifaces":
			out.printf("ifaces %s", strings.Join(a.Interfaces(netip.MustParseAddr(f[1])), ","))
		case "metric":
			out.printf("metric %g", counterValue(reg, f[1], f[2], f[3]))
		case "sent":
			out.printf("sent %d", answersSent(reg))
		case "lift":
			out.printf("lifted %d", a.LiftFences())
		}
	}
	cancel()
	if err := <-done; err != nil {
		log.Error("run", "error", err)
	}
}

// parseAnnouncements reads "ip" or "ip@if1,if2" words, prefixed with "~"
// for a releasing VIP.
func parseAnnouncements(words []string) []Announcement {
	var want []Announcement
	for _, w := range words {
		w, releasing := strings.CutPrefix(w, "~")
		ip, ifs, _ := strings.Cut(w, "@")
		a := Announcement{IP: netip.MustParseAddr(ip), Releasing: releasing}
		if ifs != "" {
			a.Interfaces = strings.Split(ifs, ",")
		}
		want = append(want, a)
	}
	return want
}

// counterValue is the value of the counter name (the sample count of a
// histogram) with labels interface=iface and protocol=proto.
func counterValue(reg *prometheus.Registry, name, iface, proto string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["interface"] == iface && labels["protocol"] == proto {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// answersSent is how many ARP replies, gratuitous ARPs and neighbour
// advertisements the announcer has sent on eth0, from its counters.
func answersSent(reg *prometheus.Registry) int {
	n := 0.0
	for _, name := range []string{"herald_l2_responses_sent_total", "herald_l2_gratuitous_sent_total"} {
		for _, proto := range []string{protoARP, protoNDP} {
			n += counterValue(reg, name, "eth0", proto)
		}
	}
	return int(n)
}

// helper is the parent's handle on a helper process.
type helper struct {
	t       testing.TB
	name    string
	p       *labkit.Process
	replies chan string

	mu        sync.Mutex
	frames    []frame
	yields    []yieldEvent
	conflicts []string
}

// yieldEvent is an OnYield call in an announcer helper.
type yieldEvent struct {
	vip, iface, by string
	t              time.Time
}

// startHelper starts a helper process in ns. It is stopped (stdin closed,
// then killed by PID if it lingers, which fails the test) when the test
// ends.
func startHelper(t testing.TB, ns, mode string, env ...string) *helper {
	t.Helper()
	argv, err := labkit.TestBinary("TestHelperProcess")
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, name: mode + "@" + ns, replies: make(chan string, 64)}
	h.p = labkit.StartProc(t, ns, labkit.ProcessOptions{
		Name: mode, Argv: argv, Env: append([]string{helperEnv + "=" + mode}, env...),
		Stdin: true, Stdout: h.readStdout, Grace: 10 * time.Second, MustStop: true,
	})
	return h
}

func (h *helper) readStdout(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "L2H ")
		if !ok {
			continue
		}
		if js, isFrame := strings.CutPrefix(line, "frame "); isFrame {
			var f frame
			if json.Unmarshal([]byte(js), &f) == nil {
				h.mu.Lock()
				h.frames = append(h.frames, f)
				h.mu.Unlock()
			}
			continue
		}
		if y, isYield := strings.CutPrefix(line, "yield "); isYield {
			if f := strings.Fields(y); len(f) == 4 {
				ns, _ := strconv.ParseInt(f[3], 10, 64)
				h.mu.Lock()
				h.yields = append(h.yields, yieldEvent{vip: f[0], iface: f[1], by: f[2], t: time.Unix(0, ns)})
				h.mu.Unlock()
			}
			continue
		}
		if c, isConflict := strings.CutPrefix(line, "conflict "); isConflict {
			h.mu.Lock()
			h.conflicts = append(h.conflicts, c)
			h.mu.Unlock()
			continue
		}
		h.replies <- line
	}
}

// conflictsSeen returns the OnConflict calls reported so far, as
// "vip iface by won".
func (h *helper) conflictsSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.conflicts...)
}

// yieldsSeen returns the OnYield calls reported so far.
func (h *helper) yieldsSeen() []yieldEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]yieldEvent(nil), h.yields...)
}

// waitYield waits for an OnYield call for vip from the n-th on (0-based).
func (h *helper) waitYield(from int, vip string) yieldEvent {
	h.t.Helper()
	var found yieldEvent
	labkit.Eventually(h.t, 10*time.Second, "OnYield for "+vip+" in "+h.name, func() bool {
		for _, y := range h.yieldsSeen()[from:] {
			if y.vip == vip {
				found = y
				return true
			}
		}
		return false
	})
	return found
}

// call sends a command and returns the helper's reply.
func (h *helper) call(format string, args ...any) string {
	h.t.Helper()
	if _, err := fmt.Fprintf(h.p.Stdin(), format+"\n", args...); err != nil {
		h.t.Fatalf("helper %s: %v", h.name, err)
	}
	select {
	case r := <-h.replies:
		return r
	case <-time.After(20 * time.Second):
		h.t.Fatalf("helper %s did not answer %q\n%s", h.name, fmt.Sprintf(format, args...), h.p.Logs())
		return ""
	}
}

// expect waits for an unsolicited reply line.
func (h *helper) expect(want string) {
	h.t.Helper()
	select {
	case r := <-h.replies:
		if r != want {
			h.t.Fatalf("helper %s said %q, want %q", h.name, r, want)
		}
	case <-time.After(20 * time.Second):
		h.t.Fatalf("helper %s did not say %q\n%s", h.name, want, h.p.Logs())
	}
}

// set calls SetAnnouncements in an announcer helper and returns the time
// just before the call.
func (h *helper) set(specs ...string) time.Time {
	h.t.Helper()
	before, _ := h.setTimed(specs...)
	return before
}

// setTimed calls SetAnnouncements and returns the times just before the
// call and just after it returned.
func (h *helper) setTimed(specs ...string) (before, after time.Time) {
	h.t.Helper()
	before, after, _ = h.setCounted(specs...)
	return before, after
}

// setCounted is setTimed that also returns answersSent as SetAnnouncements
// returned.
func (h *helper) setCounted(specs ...string) (before, after time.Time, sent int) {
	h.t.Helper()
	r := h.call("set %s", strings.Join(specs, " "))
	var t0, t1 int64
	if _, err := fmt.Sscanf(r, "ok %d %d %d", &t0, &t1, &sent); err != nil {
		h.t.Fatalf("helper %s: set: %q", h.name, r)
	}
	return time.Unix(0, t0), time.Unix(0, t1), sent
}

// sent returns the announcer's answersSent now.
func (h *helper) sent() int {
	h.t.Helper()
	r := h.call("sent")
	var n int
	if _, err := fmt.Sscanf(r, "sent %d", &n); err != nil {
		h.t.Fatalf("helper %s: sent: %q", h.name, r)
	}
	return n
}

func (h *helper) ifaces(ip string) string {
	h.t.Helper()
	return strings.TrimPrefix(h.call("ifaces %s", ip), "ifaces ")
}

func (h *helper) metric(name, iface, proto string) float64 {
	h.t.Helper()
	v, _ := strconv.ParseFloat(strings.TrimPrefix(h.call("metric %s %s %s", name, iface, proto), "metric "), 64)
	return v
}

// frameMark is a point in time in a client helper's capture.
type frameMark time.Time

// mark returns now as a point in the capture.
func (h *helper) mark() frameMark { return frameMark(time.Now()) }

// framesSince returns the frames the kernel received from a mark on. The
// helper may report a frame well after it arrived (on a busy machine it is
// scheduled late), so frames are chosen by their kernel timestamps, never
// by the order the test read them in.
func (h *helper) framesSince(from frameMark) []frame {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []frame
	for _, f := range h.frames {
		if !f.time().Before(time.Time(from)) {
			out = append(out, f)
		}
	}
	return out
}

// waitFrame waits for a frame matching pred received after mark.
func (h *helper) waitFrame(from frameMark, d time.Duration, what string, pred func(frame) bool) frame {
	h.t.Helper()
	var found frame
	labkit.Eventually(h.t, d, what, func() bool {
		for _, f := range h.framesSince(from) {
			if pred(f) {
				found = f
				return true
			}
		}
		return false
	})
	return found
}
