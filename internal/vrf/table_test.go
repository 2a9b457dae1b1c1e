package vrf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func pfx(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// links is a node with VRF red (index 10) holding two uplinks, VRF blue
// (11) that is down, VRF empty (12) with no interface, and eth0 in the
// default VRF.
func links() []Link {
	return []Link{
		{Name: "lo", Index: 1, Up: true, Addrs: pfx("127.0.0.1/8", "::1/128")},
		{Name: "eth0", Index: 2, Up: true, Addrs: pfx("198.51.100.11/26", "2001:db8::11/64")},
		{Name: "red", Index: 10, Kind: "vrf", Up: true},
		{Name: "eth2", Index: 4, Master: 10, Up: true, Addrs: pfx("198.51.100.141/26", "2001:db8:2::11/64", "fe80::2/64")},
		{Name: "eth1", Index: 3, Master: 10, Up: true, Addrs: pfx("198.51.100.75/26", "fe80::1/64", "2001:db8:1::11/64")},
		{Name: "eth3", Index: 5, Master: 10, Up: false, Addrs: pfx("198.51.100.200/29")},
		{Name: "blue", Index: 11, Kind: "vrf", Up: false},
		{Name: "eth4", Index: 6, Master: 11, Up: true, Addrs: pfx("198.51.100.180/29")},
		{Name: "empty", Index: 12, Kind: "vrf", Up: true},
		{Name: "br0", Index: 13, Kind: "bridge", Up: true},
		{Name: "eth5", Index: 7, Master: 13, Up: true, Addrs: pfx("198.51.100.190/30")},
		{Name: "v6only", Index: 14, Kind: "vrf", Up: true},
		{Name: "eth6", Index: 8, Master: 14, Up: true, Addrs: pfx("fe80::6/64", "2001:db8:6::11/64")},
		{Name: "loopy", Index: 15, Kind: "vrf", Up: true, Addrs: pfx("198.51.100.250/32")},
	}
}

func TestNextHops(t *testing.T) {
	tab := FromLinks(links())
	cases := []struct {
		name, vrf, peer string
		want            NextHops
		err             string
	}{
		{"peer in eth2's subnet", "red", "198.51.100.129", NextHops{V4: a("198.51.100.141"), V6: a("2001:db8:1::11")}, ""},
		{"peer in eth1's subnet", "red", "198.51.100.65", NextHops{V4: a("198.51.100.75"), V6: a("2001:db8:1::11")}, ""},
		{"IPv6 peer in eth2's subnet", "red", "2001:db8:2::1", NextHops{V4: a("198.51.100.75"), V6: a("2001:db8:2::11")}, ""},
		{"peer off-link: first interface by name", "red", "198.51.100.1", NextHops{V4: a("198.51.100.75"), V6: a("2001:db8:1::11")}, ""},
		{"down interface not chosen", "red", "198.51.100.201", NextHops{V4: a("198.51.100.75"), V6: a("2001:db8:1::11")}, ""},
		{"IPv6 only VRF: no link-local", "v6only", "2001:db8:6::1", NextHops{V6: a("2001:db8:6::11")}, ""},
		{"address on the VRF device", "loopy", "198.51.100.1", NextHops{V4: a("198.51.100.250")}, ""},
		{"missing", "green", "198.51.100.1", NextHops{}, "VRF green does not exist"},
		{"not a VRF", "br0", "198.51.100.1", NextHops{}, `br0 is not a VRF device (its kind is "bridge")`},
		{"plain device", "eth0", "198.51.100.1", NextHops{}, `eth0 is not a VRF device (its kind is "device")`},
		{"down VRF", "blue", "198.51.100.1", NextHops{}, "VRF blue is down"},
		{"no interface", "empty", "198.51.100.1", NextHops{}, "VRF empty has no interface that is up with a global address (enslaved: none)"},
	}
	for _, c := range cases {
		got, err := tab.NextHops(c.vrf, a(c.peer))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestKeyIgnoresOrderAndDefaultVRF(t *testing.T) {
	ls := links()
	rev := make([]Link, len(ls))
	for i, l := range ls {
		rev[len(ls)-1-i] = l
	}
	a, b := FromLinks(ls).Key(), FromLinks(rev).Key()
	if a != b {
		t.Fatalf("key depends on link order:\n%s\n%s", a, b)
	}
	ls[1].Addrs = pfx("198.51.100.12/26") // eth0, default VRF
	if FromLinks(ls).Key() != a {
		t.Error("an address outside every VRF changed the key")
	}
	ls[3].Addrs = pfx("198.51.100.142/26")
	if FromLinks(ls).Key() == a {
		t.Error("an address change in VRF red left the key alone")
	}
}

func TestWatcherRefresh(t *testing.T) {
	ls, fail := links(), error(nil)
	w := &Watcher{Read: func() ([]Link, error) { return ls, fail }}
	if !w.Refresh() {
		t.Fatal("first read: no change reported")
	}
	if w.Refresh() {
		t.Error("same links: change reported")
	}
	fail = errors.New("netlink: no permission")
	if !w.Refresh() {
		t.Error("failed read: no change reported")
	}
	tab, err := w.Current()
	if err == nil || !strings.Contains(err.Error(), "no permission") {
		t.Errorf("error %v", err)
	}
	if _, err := tab.NextHops("red", a("198.51.100.65")); err != nil {
		t.Errorf("the table before a failed read is kept: %v", err)
	}
	fail = nil
	ls = ls[:2]
	if !w.Refresh() {
		t.Error("VRFs gone: no change reported")
	}
	if tab, err := w.Current(); err != nil || tab.Key() != "" {
		t.Errorf("after removal: %q, %v", tab.Key(), err)
	}
}

func a(s string) netip.Addr { return netip.MustParseAddr(s) }
