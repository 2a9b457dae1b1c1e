package layer2

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeResponders records what the announcer asks of its responders.
type fakeResponders struct {
	mu     sync.Mutex
	events []string
	open   map[string]bool
}

type fakeResponder struct {
	f    *fakeResponders
	name string
	spec responderSpec
}

func (f *fakeResponders) start(_ context.Context, spec responderSpec) responderHandle {
	name := spec.iface + "/" + spec.proto
	f.record("open " + name)
	f.mu.Lock()
	f.open[name] = true
	f.mu.Unlock()
	return &fakeResponder{f: f, name: name, spec: spec}
}

func (f *fakeResponders) record(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

// take returns the events recorded since the last call.
func (f *fakeResponders) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.events
	f.events = nil
	return out
}

func (r *fakeResponder) setVIPs(vips []netip.Addr) {
	r.f.record(fmt.Sprintf("vips %s %v", r.name, vips))
}

// announce records the call and, as a real burst does with its first
// packet, lets the VIP be answered.
func (r *fakeResponder) announce(vip netip.Addr) {
	r.f.record(fmt.Sprintf("announce %s %v", r.name, vip))
	r.spec.announced(vip)
}
func (r *fakeResponder) silence(vip netip.Addr) {
	r.f.record(fmt.Sprintf("silence %s %v", r.name, vip))
}
func (r *fakeResponder) nudge() {}
func (r *fakeResponder) close() {
	r.f.record("close " + r.name)
	r.f.mu.Lock()
	delete(r.f.open, r.name)
	r.f.mu.Unlock()
}

// testAnnouncer returns an announcer that runs without Run or sockets: the
// test feeds it link tables with publish.
func testAnnouncer(t testing.TB, cfg Config) (*Announcer, *fakeResponders, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeResponders{open: map[string]bool{}}
	a.start = f.start
	a.runCtx = context.Background()
	return a, f, &logs
}

// node is a link table with lo and eth0 (IPv4, IPv6 and a link-local).
func node(eth0Up bool) *linkTable {
	t := newLinkTable()
	t.setLink(linkInfo{name: "lo", index: 1, up: true})
	t.setLink(linkInfo{name: "eth0", index: 2, up: eth0Up, mac: "02:00:00:00:00:11"})
	for _, p := range []string{"198.51.100.11/25", "2001:db8:1::11/64", "fe80::11/64"} {
		t.setAddr(2, netip.MustParsePrefix(p), true)
	}
	t.defaults = DefaultRoutes{V4: []int{2}}
	return t
}

func expectEvents(t *testing.T, f *fakeResponders, want ...string) {
	t.Helper()
	if got := f.take(); !slices.Equal(got, want) {
		t.Fatalf("responder events:\n got %q\nwant %q", got, want)
	}
}

func TestAnnouncerReconcile(t *testing.T) {
	a, f, logs := testAnnouncer(t, Config{})
	links := node(true)
	a.publish(links.snapshot())
	expectEvents(t, f)

	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f, "open eth0/arp", "vips eth0/arp [198.51.100.70]", "announce eth0/arp 198.51.100.70")
	if got := a.Interfaces(vip4); !slices.Equal(got, []string{"eth0"}) {
		t.Fatalf("Interfaces = %v", got)
	}
	if !a.owns("eth0", vip4) || a.owns("eth0", vip6) {
		t.Fatal("ownership snapshot wrong")
	}

	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f)

	a.SetAnnouncements([]Announcement{{IP: vip6}, {IP: vip4}})
	expectEvents(t, f, "vips eth0/arp [198.51.100.70]", "open eth0/ndp", "vips eth0/ndp [2001:db8:1::70]", "announce eth0/ndp 2001:db8:1::70")

	links.setLink(linkInfo{name: "eth0", index: 2, up: false, mac: "02:00:00:00:00:11"})
	a.publish(links.snapshot())
	expectEvents(t, f, "close eth0/arp", "close eth0/ndp")
	if a.owns("eth0", vip4) || len(a.Interfaces(vip4)) != 0 {
		t.Fatal("still announced on a down link")
	}

	links.setLink(linkInfo{name: "eth0", index: 2, up: true, mac: "02:00:00:00:00:11"})
	a.publish(links.snapshot())
	expectEvents(t, f, "open eth0/arp", "vips eth0/arp [198.51.100.70]", "open eth0/ndp", "vips eth0/ndp [2001:db8:1::70]",
		"announce eth0/arp 198.51.100.70", "announce eth0/ndp 2001:db8:1::70")

	a.SetAnnouncements(nil)
	expectEvents(t, f, "close eth0/arp", "close eth0/ndp")
	if a.owns("eth0", vip4) || a.owns("eth0", vip6) {
		t.Fatal("still owned after SetAnnouncements(nil)")
	}
	for _, line := range []string{
		`msg="started announcing VIP" ip=198.51.100.70 interface=eth0 protocol=arp`,
		`msg="stopped announcing VIP" ip=198.51.100.70 interface=eth0 reason="interface no longer chosen"`,
		`msg="stopped announcing VIP" ip=2001:db8:1::70 interface=eth0 reason="VIP withdrawn"`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("log lacks %s:\n%s", line, logs)
		}
	}
}

func TestAnnouncerLinkReappearsWithNewIdentity(t *testing.T) {
	a, f, _ := testAnnouncer(t, Config{})
	links := node(true)
	a.publish(links.snapshot())
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	f.take()
	// Down and up again within one batch of netlink updates.
	links.setLink(linkInfo{name: "eth0", index: 2, up: false, mac: "02:00:00:00:00:11"})
	links.setLink(linkInfo{name: "eth0", index: 2, up: true, mac: "02:00:00:00:00:11"})
	a.publish(links.snapshot())
	expectEvents(t, f, "close eth0/arp", "open eth0/arp", "vips eth0/arp [198.51.100.70]", "announce eth0/arp 198.51.100.70")
}

func TestAnnouncerOverrideWarnsOnce(t *testing.T) {
	a, f, logs := testAnnouncer(t, Config{})
	links := node(true)
	a.publish(links.snapshot())
	a.SetAnnouncements([]Announcement{{IP: vip4, Interfaces: []string{"eth9"}}})
	a.publish(links.snapshot())
	a.publish(links.snapshot())
	expectEvents(t, f)
	if n := strings.Count(logs.String(), "does not exist"); n != 1 {
		t.Fatalf("warned %d times:\n%s", n, logs)
	}
	links.setLink(linkInfo{name: "eth9", index: 9, up: true, mac: "02:00:00:00:00:99"})
	links.setAddr(9, netip.MustParsePrefix("10.0.0.1/24"), true)
	a.publish(links.snapshot())
	expectEvents(t, f, "open eth9/arp", "vips eth9/arp [198.51.100.70]", "announce eth9/arp 198.51.100.70")
	links.deleteLink(9)
	a.publish(links.snapshot())
	if n := strings.Count(logs.String(), "does not exist"); n != 2 {
		t.Fatalf("a missing interface that came back and left again should warn again; warned %d times", n)
	}
}

func TestAnnouncerNotRunning(t *testing.T) {
	a, f, _ := testAnnouncer(t, Config{})
	a.runCtx = nil
	a.SetAnnouncements([]Announcement{{IP: vip4}})
	expectEvents(t, f)
	if len(a.Interfaces(vip4)) != 0 || a.owns("eth0", vip4) {
		t.Fatal("announced without Run")
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{ExcludeInterfaces: []string{"["}}); err == nil {
		t.Error("bad pattern accepted")
	}
	if _, err := New(Config{Gratuitous: GratuitousConfig{Count: -1}}); err == nil {
		t.Error("negative count accepted")
	}
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.Gratuitous.Count != DefaultGratuitousCount || a.cfg.Gratuitous.Interval != DefaultGratuitousInterval {
		t.Errorf("defaults not applied: %+v", a.cfg.Gratuitous)
	}
}

func TestNormalize(t *testing.T) {
	got := normalize([]Announcement{
		{IP: netip.MustParseAddr("::ffff:198.51.100.70"), Interfaces: []string{"b", "a"}},
		{IP: vip4, Interfaces: []string{"a"}},
		{IP: netip.Addr{}},
	})
	if len(got) != 1 || !slices.Equal(got[vip4], []string{"a", "b"}) {
		t.Fatalf("normalize = %v", got)
	}
}
