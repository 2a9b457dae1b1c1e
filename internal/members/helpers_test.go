package members

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-lb/herald/test/labkit"
)

// testKey is the shared cluster key of the tests (AES-128).
func testKey() []byte { return []byte("0123456789abcdef") }

// testMember is a Members on 127.0.0.1 with its own registry, a record of
// its log lines and a count of OnChange calls.
type testMember struct {
	*Members
	reg     *prometheus.Registry
	logs    *recordingHandler
	changes atomic.Int64
}

type memberOption func(*Config)

func withTiming(t Timing) memberOption   { return func(c *Config) { c.Timing = t } }
func withKey(key []byte) memberOption    { return func(c *Config) { c.SecretKey = key } }
func withOnChange(f func()) memberOption { return func(c *Config) { c.OnChange = f } }

// startMember starts a member on a free port of 127.0.0.1 and shuts it down
// when the test ends. Its logs are printed only if the test fails.
func startMember(tb testing.TB, name string, opts ...memberOption) *testMember {
	tb.Helper()
	tm := &testMember{reg: prometheus.NewRegistry(), logs: &recordingHandler{records: &records{}}}
	cfg := Config{
		NodeName:      name,
		BindAddr:      "127.0.0.1",
		AdvertiseAddr: "127.0.0.1",
		SecretKey:     testKey(),
		Logger:        slog.New(tm.logs),
		Registerer:    tm.reg,
		OnChange:      func() { tm.changes.Add(1) },
	}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		tb.Fatalf("start member %s: %v", name, err)
	}
	tm.Members = m
	tb.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			tb.Errorf("shutdown %s: %v", name, err)
		}
		if tb.Failed() {
			tb.Logf("log of %s:\n%s", name, tm.logs.text())
		}
	})
	return tm
}

// addr is the member's host:port, as another member would Join it.
func (tm *testMember) addr() string { return nodeAddrPort(tm.ml.LocalNode()).String() }

// startCluster starts the named members and makes each Join all others, as
// speakers do with the addresses of all Node objects. It waits until every
// member sees every member Alive.
func startCluster(tb testing.TB, names []string, opts ...memberOption) []*testMember {
	tb.Helper()
	ms := make([]*testMember, len(names))
	addrs := make([]string, len(names))
	for i, name := range names {
		ms[i] = startMember(tb, name, opts...)
		addrs[i] = ms[i].addr()
	}
	for _, m := range ms {
		m.Join(addrs)
	}
	for _, m := range ms {
		for _, name := range names {
			waitState(tb, m, name, Alive, 10*time.Second)
		}
	}
	return ms
}

func waitState(tb testing.TB, m *testMember, node string, want State, timeout time.Duration) {
	tb.Helper()
	labkit.Eventually(tb, timeout, m.name+" to see "+node+" "+want.String(), func() bool {
		return m.State(node) == want
	})
}

func leaveCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// records is the shared store of a recordingHandler and its derivatives.
type records struct {
	mu    sync.Mutex
	lines []string
}

// recordingHandler keeps every log record as one text line
// ("LEVEL msg k=v ..."), so tests can look for state changes and errors.
type recordingHandler struct {
	records *records
	attrs   []slog.Attr
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(r.Time.Format("15:04:05.000") + " " + r.Level.String() + " " + r.Message)
	write := func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.records.mu.Lock()
	h.records.lines = append(h.records.lines, b.String())
	h.records.mu.Unlock()
	return nil
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordingHandler{records: h.records, attrs: append(slices.Clone(h.attrs), attrs...)}
}

func (h *recordingHandler) WithGroup(string) slog.Handler { return h }

// matching returns the recorded lines that contain every one of parts.
func (h *recordingHandler) matching(parts ...string) []string {
	h.records.mu.Lock()
	defer h.records.mu.Unlock()
	var out []string
	for _, l := range h.records.lines {
		if containsAll(l, parts) {
			out = append(out, l)
		}
	}
	return out
}

func (h *recordingHandler) text() string {
	h.records.mu.Lock()
	defer h.records.mu.Unlock()
	return strings.Join(h.records.lines, "\n")
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
