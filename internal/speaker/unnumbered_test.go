package speaker

import (
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/config"
)

// An unnumbered session's status names its interface, with the neighbour
// address learnt on it (without the zone) or why there is none.
func TestBuildStatusUnnumbered(t *testing.T) {
	sessions := []bgp.SessionState{
		{Name: "tor-u", Interface: "eth1", Peer: netip.MustParseAddr("fe80::a8c1:abff:fe00:1%eth1"), State: "Established"},
		{Name: "tor-v", Interface: "eth2", State: "NotConfigured", Error: "interface eth2: no IPv6 link-local neighbour learnt on the interface"},
		{Name: "tor-w", Interface: "eth9", State: "NotConfigured", Error: "interface eth9: no such interface on this node"},
	}
	st := buildStatus("speaker-abc", nil, sessions, nil)
	if len(st.BGP) != 3 {
		t.Fatalf("BGP %+v", st.BGP)
	}
	if u := st.BGP[0]; u.Interface != "eth1" || u.PeerAddress != "fe80::a8c1:abff:fe00:1" || u.Message != "" {
		t.Errorf("up: %+v", u)
	}
	if v := st.BGP[1]; v.Interface != "eth2" || v.PeerAddress != "" || v.Message != sessions[1].Error {
		t.Errorf("no neighbour: %+v", v)
	}
	if w := st.BGP[2]; w.Interface != "eth9" || w.Message != sessions[2].Error {
		t.Errorf("no interface: %+v", w)
	}
}

func TestDesiredBGPUnnumbered(t *testing.T) {
	res := announce.BGPResult{Peers: []*config.Peer{
		{Name: "tor-u", Interface: "eth1", MyASN: 64512, DynamicASN: config.DynamicExternal, Port: 179},
		{Name: "tor-n", Address: netip.MustParseAddr("198.51.100.1"), MyASN: 64512, PeerASN: 64513, Port: 179},
	}}
	d := desiredBGP(res, &config.Config{}, netip.MustParseAddr("198.51.100.11"), netip.Addr{})
	if len(d.Sessions) != 2 {
		t.Fatalf("sessions %+v", d.Sessions)
	}
	if u := d.Sessions[0]; u.Interface != "eth1" || u.PeerAddress.IsValid() || u.DynamicASN != bgp.AnyExternal {
		t.Errorf("unnumbered: %+v", u)
	}
	if n := d.Sessions[1]; n.Interface != "" || n.PeerAddress.String() != "198.51.100.1" {
		t.Errorf("numbered: %+v", n)
	}
}
