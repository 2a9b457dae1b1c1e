package speaker

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/vrf"
)

func TestPlaceVRFs(t *testing.T) {
	p := netip.MustParsePrefix
	tab := vrf.FromLinks([]vrf.Link{
		{Name: "eth0", Index: 2, Up: true, Addrs: []netip.Prefix{p("198.51.100.11/26")}},
		{Name: "red", Index: 10, Kind: "vrf", Up: true},
		{Name: "eth1", Index: 3, Master: 10, Up: true, Addrs: []netip.Prefix{p("198.51.100.75/26"), p("2001:db8:2::11/64")}},
	})
	peer := netip.MustParseAddr("198.51.100.65")
	sessions := func() []bgp.Session {
		return []bgp.Session{{Name: "plain", PeerAddress: peer}, {Name: "red", PeerAddress: peer, VRF: "red"},
			{Name: "green", PeerAddress: peer, VRF: "green"}}
	}
	ss := sessions()
	placeVRFs(ss, tab, nil, "n1")
	if !reflect.DeepEqual(ss[0], bgp.Session{Name: "plain", PeerAddress: peer}) {
		t.Errorf("default VRF session changed: %+v", ss[0])
	}
	if ss[1].NextHopV4 != netip.MustParseAddr("198.51.100.75") || ss[1].NextHopV6 != netip.MustParseAddr("2001:db8:2::11") || ss[1].Unavailable != "" {
		t.Errorf("red: %+v", ss[1])
	}
	if want := "VRF green does not exist on node n1"; ss[2].Unavailable != want {
		t.Errorf("green: %q, want %q", ss[2].Unavailable, want)
	}
	ss = sessions()
	placeVRFs(ss, tab, errors.New("reading the node's links: permission denied"), "n1")
	if want := "VRF red on node n1: reading the node's links: permission denied"; ss[1].Unavailable != want || ss[0].Unavailable != "" {
		t.Errorf("read error: %q, want %q", ss[1].Unavailable, want)
	}
}
