package routerconf

import (
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestParseFRRRoute(t *testing.T) {
	e, err := ParseFRRRoute(readTestdata(t, "frr-route-v4.json"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Prefix != netip.MustParsePrefix("198.51.100.130/32") || len(e.Paths) != 1 {
		t.Fatalf("got %+v", e)
	}
	p, ok := e.BestPath()
	if !ok {
		t.Fatal("no best path")
	}
	if p.Peer != netip.MustParseAddr("198.51.100.11") || !slices.Equal(p.NextHops, addrs("198.51.100.11")) ||
		!slices.Equal(p.ASPath, []uint32{64513}) || p.Origin != "IGP" || p.HasLocalPref ||
		!slices.Equal(p.Communities, []string{"64512:100", "65000:7"}) || !slices.Equal(p.LargeCommunities, []string{"64512:1:2"}) {
		t.Errorf("path %+v", p)
	}
	e6, err := ParseFRRRoute(readTestdata(t, "frr-route-v6.json"))
	if err != nil || len(e6.Paths) != 1 || !slices.Equal(e6.Paths[0].NextHops, addrs("2001:db8:1::11")) {
		t.Errorf("v6: %+v %v", e6, err)
	}
	if p.Stale {
		t.Errorf("path %+v is stale", p)
	}
	lb, err := ParseFRRRoute([]byte(`{"prefix":"198.51.100.136/32","paths":[{"extendedCommunity":{"string":"LB:64513:250000 (2.000 Mbps)"},"peer":{"peerId":"198.51.100.12"}}]}`))
	if err != nil || len(lb.Paths) != 1 || lb.Paths[0].ExtendedCommunities != "LB:64513:250000 (2.000 Mbps)" {
		t.Errorf("link bandwidth: %+v %v", lb, err)
	}
	stale, err := ParseFRRRoute([]byte(`{"prefix":"198.51.100.130/32","paths":[{"stale":true,"peer":{"peerId":"198.51.100.11"}}]}`))
	if err != nil || len(stale.Paths) != 1 || !stale.Paths[0].Stale {
		t.Errorf("stale: %+v %v", stale, err)
	}
	none, err := ParseFRRRoute(readTestdata(t, "frr-route-none.json"))
	if err != nil || len(none.Paths) != 0 {
		t.Errorf("none: %+v %v", none, err)
	}
}

func TestParseFRRNeighbors(t *testing.T) {
	peers, err := ParseFRRNeighbors(readTestdata(t, "frr-neighbors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 {
		t.Fatalf("got %d peers: %+v", len(peers), peers)
	}
	p := peers[0]
	if p.Address != netip.MustParseAddr("198.51.100.11") || !p.Up() || !p.Dynamic || p.ASN != 64513 ||
		p.Name != "NODES4" || p.Received["ipv4"] != 1 || p.Established != 1 || !p.GracefulRestart ||
		!slices.Equal(p.EndOfRIB, []string{"ipv4"}) {
		t.Errorf("peer %+v", p)
	}
	if peers[1].Address != netip.MustParseAddr("2001:db8:1::11") || peers[1].Received["ipv6"] != 1 {
		t.Errorf("peer %+v", peers[1])
	}
}

func TestParseBIRD(t *testing.T) {
	peers, err := ParseBIRDProtocols(string(readTestdata(t, "bird-protocols.txt")))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]netip.Addr{}
	for _, p := range peers {
		names = append(names, p.Name)
		byName[p.Name] = p.Address
		if !p.Up() || !p.Dynamic || p.ASN != 64513 {
			t.Errorf("peer %+v", p)
		}
	}
	if !slices.Equal(names, []string{"dyn4_1", "dyn4_2", "dyn6_1", "dyn6_2"}) {
		t.Fatalf("peers %v", names)
	}
	if peers[0].Received["ipv4"] != 1 || peers[2].Received["ipv6"] != 1 {
		t.Errorf("received: %+v", peers)
	}
	e, err := ParseBIRDRoute(string(readTestdata(t, "bird-route-v4.txt")), byName)
	if err != nil {
		t.Fatal(err)
	}
	if e.Prefix != netip.MustParsePrefix("198.51.100.130/32") || len(e.Paths) != 2 {
		t.Fatalf("entry %+v", e)
	}
	best, second := e.Paths[0], e.Paths[1]
	if !best.Best || second.Best || best.Peer != netip.MustParseAddr("198.51.100.11") || second.Peer != netip.MustParseAddr("198.51.100.12") {
		t.Errorf("paths %+v", e.Paths)
	}
	if !slices.Equal(second.Communities, []string{"64512:100", "65000:2"}) || !slices.Equal(second.LargeCommunities, []string{"64512:1:2"}) ||
		!slices.Equal(second.ASPath, []uint32{64513}) || second.LocalPref != 100 || !second.HasLocalPref || second.Origin != "IGP" {
		t.Errorf("second path %+v", second)
	}
	e6, err := ParseBIRDRoute(string(readTestdata(t, "bird-route-v6.txt")), byName)
	if err != nil || len(e6.Paths) != 2 || !slices.Equal(e6.Paths[1].NextHops, addrs("2001:db8:1::12")) {
		t.Errorf("v6 %+v %v", e6, err)
	}
	none, err := ParseBIRDRoute(string(readTestdata(t, "bird-route-none.txt")), byName)
	if err != nil || len(none.Paths) != 0 {
		t.Errorf("none %+v %v", none, err)
	}
}

func TestApplyBIRDBFD(t *testing.T) {
	peers := []Peer{{Address: netip.MustParseAddr("198.51.100.12")}, {Address: netip.MustParseAddr("198.51.100.13")}}
	ApplyBIRDBFD(peers, "BIRD 2.0.12 ready.\nbfd1:\nIP address                Interface  State      Since         Interval  Timeout\n"+
		"198.51.100.12             eth0       Up         2026-11-29 12:51:15    0.300    0.900\n")
	if peers[0].BFD != "up" || peers[1].BFD != "" {
		t.Errorf("got %+v", peers)
	}
}

// FuzzParseBIRDRoute: arbitrary birdc output never panics.
func FuzzParseBIRDRoute(f *testing.F) {
	for _, name := range []string{"bird-route-v4.txt", "bird-route-v6.txt", "bird-protocols.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseBIRDRoute(s, map[string]netip.Addr{})
		peers, _ := ParseBIRDProtocols(s)
		ApplyBIRDBFD(peers, s)
	})
}

// TestParseFRRBFDPeers: the detection time is the peer's multiplier
// times the slower of its transmit interval and our receive interval (a
// fresh session's peer still sends once a second).
func TestParseFRRBFDPeers(t *testing.T) {
	out := []byte(`[
 {"multihop":false,"peer":"198.51.100.11","local":"198.51.100.1","vrf":"default","id":1,"remote-id":7,"status":"up","uptime":3,
  "diagnostic":"ok","remote-diagnostic":"ok","receive-interval":100,"transmit-interval":100,"echo-receive-interval":50,"echo-transmit-interval":0,
  "detect-multiplier":3,"remote-receive-interval":100,"remote-transmit-interval":100,"remote-echo-receive-interval":0,"remote-detect-multiplier":3},
 {"multihop":false,"peer":"198.51.100.12","local":"198.51.100.1","vrf":"default","id":2,"remote-id":8,"status":"up","uptime":0,
  "receive-interval":100,"transmit-interval":100,"detect-multiplier":3,"remote-receive-interval":1000,"remote-transmit-interval":1000,"remote-detect-multiplier":3},
 {"multihop":false,"peer":"198.51.100.13","local":"198.51.100.1","vrf":"default","id":3,"remote-id":0,"status":"down","downtime":5,
  "receive-interval":100,"transmit-interval":100,"detect-multiplier":3},
 {"multihop":false,"peer":"fe80::a8c1:abff:fe00:11","local":"fe80::a8c1:abff:fe00:1","vrf":"default","interface":"p2p-node1","id":4,"remote-id":9,
  "status":"up","uptime":2,"receive-interval":100,"transmit-interval":100,"detect-multiplier":3,"remote-receive-interval":100,
  "remote-transmit-interval":100,"remote-detect-multiplier":3}
]`)
	got, err := ParseFRRBFDPeers(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]BFDPeer{
		netip.MustParseAddr("198.51.100.11"):           {Status: "up", Detect: 300 * time.Millisecond},
		netip.MustParseAddr("198.51.100.12"):           {Status: "up", Detect: 3 * time.Second},
		netip.MustParseAddr("198.51.100.13"):           {Status: "down"},
		netip.MustParseAddr("fe80::a8c1:abff:fe00:11"): {Status: "up", Interface: "p2p-node1", Detect: 300 * time.Millisecond},
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
