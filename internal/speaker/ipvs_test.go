package speaker

import (
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"
)

// procSys is a fake /proc/sys with conf/<iface>/arp_{ignore,announce}.
func procSys(conf map[string][2]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for iface, v := range conf {
		fsys["net/ipv4/conf/"+iface+"/arp_ignore"] = &fstest.MapFile{Data: []byte(v[0] + "\n")}
		fsys["net/ipv4/conf/"+iface+"/arp_announce"] = &fstest.MapFile{Data: []byte(v[1] + "\n")}
	}
	return fsys
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestReadARPSettingsEffective(t *testing.T) {
	for _, c := range []struct {
		conf   map[string][2]string
		ifaces []string
		want   ARPSettings
	}{
		{map[string][2]string{"all": {"0", "0"}}, nil, ARPSettings{0, 0}},
		{map[string][2]string{"all": {"1", "2"}}, nil, ARPSettings{1, 2}},
		// the kernel takes max(all, interface)
		{map[string][2]string{"all": {"0", "0"}, "eth0": {"1", "2"}}, []string{"eth0"}, ARPSettings{1, 2}},
		{map[string][2]string{"all": {"1", "2"}, "eth0": {"0", "0"}}, []string{"eth0"}, ARPSettings{1, 2}},
		// the laxest of the interfaces counts
		{map[string][2]string{"all": {"0", "0"}, "eth0": {"1", "2"}, "eth1": {"0", "2"}}, []string{"eth0", "eth1"}, ARPSettings{0, 2}},
	} {
		got, err := ReadARPSettings(procSys(c.conf), c.ifaces...)
		if err != nil || got != c.want {
			t.Errorf("%v on %v: %+v, %v; want %+v", c.conf, c.ifaces, got, err, c.want)
		}
	}
	if _, err := ReadARPSettings(procSys(nil)); err == nil || !strings.Contains(err.Error(), "conf/all/arp_ignore") {
		t.Errorf("missing sysctl: %v", err)
	}
	bad := procSys(map[string][2]string{"all": {"x", "0"}})
	if _, err := ReadARPSettings(bad); err == nil {
		t.Error("non-numeric sysctl accepted")
	}
}

func TestIPVSARPUnsafe(t *testing.T) {
	for _, c := range []struct {
		addrs []netip.Addr
		s     ARPSettings
		want  bool
	}{
		{nil, ARPSettings{0, 0}, false},                                   // no IPVS
		{addrs("2001:db8::10"), ARPSettings{0, 0}, false},                 // IPv6 only: NDP is per interface
		{addrs("198.51.100.10"), ARPSettings{0, 0}, true},                 // the default kernel settings
		{addrs("198.51.100.10"), ARPSettings{1, 0}, true},                 // half of strict ARP
		{addrs("198.51.100.10"), ARPSettings{0, 2}, true},                 // the other half
		{addrs("198.51.100.10"), ARPSettings{1, 2}, false},                // strictARP: true
		{addrs("198.51.100.10", "2001:db8::1"), ARPSettings{2, 2}, false}, // stricter still
	} {
		got, msg := IPVSARPUnsafe(c.addrs, c.s)
		if got != c.want {
			t.Errorf("%v %+v: unsafe=%v, want %v", c.addrs, c.s, got, c.want)
		}
		if got && !strings.Contains(msg, "strictARP: true") {
			t.Errorf("message does not say what to set: %s", msg)
		}
	}
}

// TestIPVSWatchReportsOnce: the gauge follows each check; the Warning
// event is recorded when the node turns unsafe, not on every check.
func TestIPVSWatchReportsOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := record.NewFakeRecorder(10)
	held := addrs("198.51.100.10")
	fsys := procSys(map[string][2]string{"all": {"0", "0"}})
	w, err := NewIPVSWatch(IPVSWatch{NodeName: "node1", ProcSys: fsys, Recorder: rec,
		Addrs: func() ([]netip.Addr, error) { return held, nil }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, reg)
	if err != nil {
		t.Fatal(err)
	}
	w.Check()
	w.Check()
	if v := testutil.ToFloat64(w.gauge); v != 1 {
		t.Errorf("gauge %v, want 1", v)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning "+ReasonIPVSWithoutStrictARP) {
		t.Errorf("event %q", ev)
	}
	fsys["net/ipv4/conf/all/arp_ignore"].Data = []byte("1")
	fsys["net/ipv4/conf/all/arp_announce"].Data = []byte("2")
	w.Check()
	if v := testutil.ToFloat64(w.gauge); v != 0 {
		t.Errorf("after strict ARP: gauge %v, want 0", v)
	}
	held = nil
	w.Check()
	if v := testutil.ToFloat64(w.gauge); v != 0 || len(rec.Events) != 0 {
		t.Errorf("without IPVS: gauge %v, %d events", v, len(rec.Events))
	}
	if n, err := testutil.GatherAndCount(reg, "herald_speaker_ipvs_arp_unsafe"); err != nil || n != 1 {
		t.Errorf("registry: %d series, %v", n, err)
	}
}
