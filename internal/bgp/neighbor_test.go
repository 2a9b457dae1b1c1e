package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

var (
	llRouter = netip.MustParseAddr("fe80::a8c1:abff:fe00:1")
	llOther  = netip.MustParseAddr("fe80::a8c1:abff:fe00:2")
	llOwn    = netip.MustParseAddr("fe80::a8c1:abff:fe00:11")
)

func TestPickNeighbor(t *testing.T) {
	own := []netip.Addr{llOwn, netip.MustParseAddr("2001:db8:1::11")}
	cases := []struct {
		name    string
		neighs  []linkNeighbor
		want    netip.Addr
		wantErr string
	}{
		{"the router", []linkNeighbor{{llRouter, true}}, llRouter.WithZone("eth1"), ""},
		{"global neighbours and own address skipped", []linkNeighbor{
			{netip.MustParseAddr("2001:db8:1::1"), true}, {llOwn, true}, {llRouter, true}}, llRouter.WithZone("eth1"), ""},
		{"failed entry skipped", []linkNeighbor{{llOther, false}, {llRouter, true}}, llRouter.WithZone("eth1"), ""},
		{"same neighbour twice", []linkNeighbor{{llRouter.WithZone("eth1"), true}, {llRouter, true}}, llRouter.WithZone("eth1"), ""},
		{"none", nil, netip.Addr{}, "no IPv6 link-local neighbour learnt on the interface"},
		{"only failed", []linkNeighbor{{llRouter, false}}, netip.Addr{}, "Router Advertisements"},
		{"two: not point-to-point", []linkNeighbor{{llOther, true}, {llRouter, true}}, netip.Addr{},
			"2 IPv6 link-local neighbours (fe80::a8c1:abff:fe00:1, fe80::a8c1:abff:fe00:2): unnumbered peering needs a point-to-point link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickNeighbor("eth1", tc.neighs, own)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := pickNeighbor("eth1", nil, own); !errors.Is(err, ErrNoNeighbor) {
		t.Errorf("no neighbour must wrap ErrNoNeighbor: %v", err)
	}
}

func TestResolveInterfaces(t *testing.T) {
	calls := map[string]int{}
	find := func(iface string) (netip.Addr, error) {
		calls[iface]++
		switch iface {
		case "eth1":
			return llRouter.WithZone("eth1"), nil
		case "eth2":
			return netip.Addr{}, fmt.Errorf("interface eth2: %w", ErrNoNeighbor)
		}
		return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, ErrNoInterface)
	}
	in := []Session{
		sess("numbered", "198.51.100.1"),
		{Name: "u1", Interface: "eth1"},
		{Name: "u1-again", Interface: "eth1"},
		{Name: "u2", Interface: "eth2"},
		{Name: "u9", Interface: "eth9"},
	}
	r := resolveInterfaces(in, find)
	if names(r.sessions) != "numbered,u1,u1-again" {
		t.Errorf("sessions: %s", names(r.sessions))
	}
	if r.sessions[1].PeerAddress != llRouter.WithZone("eth1") || r.sessions[1].Interface != "eth1" {
		t.Errorf("u1: %+v", r.sessions[1])
	}
	if calls["eth1"] != 1 {
		t.Errorf("eth1 looked up %d times, want once per apply", calls["eth1"])
	}
	if rf := r.refused["u2"]; rf.iface != "eth2" || !errors.Is(rf.err, ErrNoNeighbor) {
		t.Errorf("u2: %+v", rf)
	}
	if rf := r.refused["u9"]; rf.iface != "eth9" || !errors.Is(rf.err, ErrNoInterface) {
		t.Errorf("u9: %+v", rf)
	}
	if r2 := resolveInterfaces(in, find); r2.key != r.key {
		t.Errorf("same answers, different keys: %q, %q", r.key, r2.key)
	}
	if r3 := resolveInterfaces(in[:1], find); r3.key != "" || len(r3.refused) != 0 {
		t.Errorf("numbered only: %+v", r3)
	}
}

func unnumberedSession(t *testing.T, iface string, peer netip.Addr) Session {
	t.Helper()
	return norm(t, Session{Name: "tor", Interface: iface, PeerAddress: peer, MyASN: 64512, DynamicASN: AnyExternal})
}

func TestNormalizeUnnumbered(t *testing.T) {
	n := unnumberedSession(t, "eth1", llRouter.WithZone("eth1"))
	if len(n.Families) != 2 {
		t.Errorf("an unnumbered session carries both families by default: %v", n.Families)
	}
	for name, mod := range map[string]func(*Session){
		"zone not the interface": func(s *Session) { s.PeerAddress = llRouter.WithZone("eth2") },
		"global peer":            func(s *Session) { s.PeerAddress = netip.MustParseAddr("2001:db8:1::1") },
		"IPv4 peer":              func(s *Session) { s.PeerAddress = netip.MustParseAddr("198.51.100.1") },
		"source address":         func(s *Session) { s.SourceAddress = llOwn.WithZone("eth1") },
		"multihop":               func(s *Session) { s.EBGPMultiHop = true },
		"passive":                func(s *Session) { s.Passive = true },
		"VRF":                    func(s *Session) { s.VRF = "red" },
	} {
		s := Session{Name: "tor", Interface: "eth1", PeerAddress: llRouter.WithZone("eth1"), MyASN: 64512, DynamicASN: AnyExternal}
		mod(&s)
		if _, err := normalize(s); err == nil || !strings.Contains(err.Error(), "interface eth1") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestPeerConfigUnnumbered(t *testing.T) {
	p := peerConfig(unnumberedSession(t, "eth1", llRouter.WithZone("eth1")), false)
	if got := p.GetConf().GetNeighborAddress(); got != "fe80::a8c1:abff:fe00:1%eth1" {
		t.Errorf("neighbor address %q: want the link-local neighbour zoned with the interface", got)
	}
	if p.GetConf().GetPeerAsn() != 0 || p.GetTransport().GetLocalAddress() != "" || p.GetEbgpMultihop() != nil {
		t.Errorf("conf %v, transport %v", p.GetConf(), p.GetTransport())
	}
	fams := p.GetAfiSafis()
	if len(fams) != 2 || fams[0].GetConfig().GetFamily().GetAfi() != api.Family_AFI_IP || fams[1].GetConfig().GetFamily().GetAfi() != api.Family_AFI_IP6 {
		t.Errorf("afi-safis: %v (GoBGP advertises the extended next hop capability for IPv4 unicast)", fams)
	}
}

// TestPeerConfigUnnumberedBFD: BFD on an unnumbered session is GoBGP's
// single-hop BFD toward the zoned link-local neighbour (GoBGP dials it
// with its zone); TestUnnumberedBFD in e2e/bgp runs it against FRR.
func TestPeerConfigUnnumberedBFD(t *testing.T) {
	s := unnumberedSession(t, "eth1", llRouter.WithZone("eth1"))
	s.BFD = &BFD{TransmitInterval: 100 * time.Millisecond, ReceiveInterval: 100 * time.Millisecond, DetectMultiplier: 3}
	s = norm(t, s)
	p := peerConfig(s, false)
	b := p.GetBfd()
	if !b.GetEnabled() || b.GetDesiredMinimumTxInterval() != 100000 || b.GetRequiredMinimumReceive() != 100000 || b.GetDetectionMultiplier() != 3 {
		t.Errorf("BFD config %v: want enabled at 100 ms x 3", b)
	}
	if got := p.GetConf().GetNeighborAddress(); got != "fe80::a8c1:abff:fe00:1%eth1" {
		t.Errorf("neighbor address %q: want the zoned link-local neighbour, which GoBGP's BFD dials", got)
	}
}

func TestPlanPathsUnnumbered(t *testing.T) {
	u := unnumberedSession(t, "eth1", llRouter.WithZone("eth1"))
	ss := append(threeSessions(t), u)
	p := planPaths([]Path{{Prefix: vip4}, {Prefix: vip6}}, ss, nodeV4, nodeV6)
	a4 := p.deliveries[vip4][u.PeerAddress]
	if a4.nextHop.IsValid() || a4.nextHopSelf {
		t.Errorf("IPv4 over an unnumbered session keeps next hop 0.0.0.0 (GoBGP sends the link-local): %+v", a4)
	}
	if c := p.deliveries[vip4][peerC6]; c.nextHop != nodeV4 {
		t.Errorf("a numbered IPv6 session still gets the node's IPv4 next hop: %+v", c)
	}
	if a6 := p.deliveries[vip6][u.PeerAddress]; !a6.nextHopSelf {
		t.Errorf("IPv6 over an unnumbered session goes with next-hop-self: %+v", a6)
	}
	req, _ := buildPolicyLayout(p.deliveries)
	var sets []string
	for _, d := range req.GetDefinedSets() {
		if d.GetDefinedType() == api.DefinedType_DEFINED_TYPE_NEIGHBOR {
			sets = append(sets, d.GetList()...)
		}
	}
	if !strings.Contains(strings.Join(sets, " "), llRouter.String()) || strings.Contains(strings.Join(sets, " "), "%") {
		t.Errorf("neighbor sets %v: want the link-local without its zone (GoBGP parses plain addresses)", sets)
	}
	var self bool
	for _, pol := range req.GetPolicies() {
		for _, st := range pol.GetStatements() {
			self = self || st.GetActions().GetNexthop().GetSelf()
		}
	}
	if !self {
		t.Error("no next-hop-self action in the export policy")
	}
}

// fakeFinder answers FindNeighbor from a settable table.
type fakeFinder struct {
	mu  sync.Mutex
	ans map[string]netip.Addr
}

func (f *fakeFinder) set(iface string, a netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ans[iface] = a
}

func (f *fakeFinder) find(iface string) (netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.ans[iface]; ok {
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("interface %s: %w", iface, ErrNoNeighbor)
}

// An unnumbered session with no neighbour says so, with its interface;
// once a neighbour is learnt the speaker applies again by itself.
func TestUnnumberedWaitsForNeighbour(t *testing.T) {
	f := &fakeFinder{ans: map[string]netip.Addr{}}
	s, err := New(Config{Logger: testLogger(), FindNeighbor: f.find, NeighborInterval: 20 * time.Millisecond})
	must(t, err)
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	u := Session{Name: "tor", Interface: "herald-nosuch", MyASN: 64512, DynamicASN: AnyExternal}
	d := Desired{NodeIPv4: nodeV4, Sessions: []Session{u}, Paths: []Path{{Prefix: vip4}}}
	if err := s.Apply(context.Background(), d); err == nil || !strings.Contains(err.Error(), "no IPv6 link-local neighbour") {
		t.Fatalf("Apply: %v", err)
	}
	st := s.Sessions()
	if len(st) != 1 || st[0].Interface != "herald-nosuch" || st[0].State != stateNotConfigured || st[0].Peer.IsValid() ||
		!strings.Contains(st[0].Error, "no IPv6 link-local neighbour learnt") {
		t.Fatalf("status: %+v", st)
	}
	// The interface does not exist: GoBGP refuses to add the neighbour,
	// which is still a change of state the watch must apply.
	f.set("herald-nosuch", llRouter.WithZone("herald-nosuch"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		st = s.Sessions()
		if len(st) == 1 && st[0].Peer == llRouter.WithZone("herald-nosuch") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the neighbour learnt was not applied: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st[0].Interface != "herald-nosuch" || strings.Contains(st[0].Error, "no IPv6 link-local neighbour") {
		t.Errorf("status after the neighbour was learnt: %+v", st[0])
	}
	d.Sessions = nil
	must(t, s.Apply(context.Background(), d))
	s.mu.Lock()
	watching := s.watchStop != nil
	s.mu.Unlock()
	if watching {
		t.Error("the neighbour watch still runs with no unnumbered session")
	}
}
