package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

// testRouter is a plain GoBGP server playing the router: it listens on a
// loopback address and holds one passive neighbor, the speaker.
type testRouter struct {
	srv  *server.BgpServer
	addr netip.Addr
	port uint16

	mu          sync.Mutex
	up          bool
	established int                  // transitions to Established
	withdrawals map[netip.Prefix]int // withdrawals received in UPDATEs
	marked      map[netip.Prefix]int // paths received with GRACEFUL_SHUTDOWN
	log         []string             // "withdraw <p>" and "down" in arrival order
}

// route is what the router holds for one prefix from the speaker.
type route struct {
	nextHop     netip.Addr
	communities []uint32
	large       [][3]uint32
	localPref   uint32  // 0: absent
	linkBW      float32 // link-bandwidth community, bytes/s; 0: absent
	linkAS      uint16
}

func startRouter(t *testing.T, addr string, asn uint32, speaker netip.Addr, speakerASN uint32) *testRouter {
	t.Helper()
	r := &testRouter{addr: netip.MustParseAddr(addr), port: freePort(t, addr), withdrawals: map[netip.Prefix]int{}, marked: map[netip.Prefix]int{}}
	r.srv = server.NewBgpServer(server.LoggerOption(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), nil))
	go r.srv.Serve()
	ctx := context.Background()
	routerID := addr
	if r.addr.Is6() {
		routerID = "198.51.100.99"
	}
	must(t, r.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: asn, RouterId: routerID, ListenPort: int32(r.port), ListenAddresses: []string{addr},
	}}))
	t.Cleanup(r.srv.Stop)
	must(t, r.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: speaker.String(), PeerAsn: speakerASN},
		Transport: &api.Transport{PassiveMode: true, LocalAddress: addr},
		AfiSafis: []*api.AfiSafi{
			{Config: &api.AfiSafiConfig{Family: apiFamily(IPv4Unicast), Enabled: true}},
			{Config: &api.AfiSafiConfig{Family: apiFamily(IPv6Unicast), Enabled: true}},
		},
	}}))
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	must(t, r.srv.WatchEvent(wctx, server.WatchEventMessageCallbacks{
		OnPeerUpdate: r.onPeer,
		OnPathUpdate: r.onUpdate,
	}, server.WatchPeer(), server.WatchUpdate(false, "", "")))
	return r
}

func (r *testRouter) onPeer(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	up := ev.Peer.State.SessionState == bgppkt.BGP_FSM_ESTABLISHED
	switch {
	case up && !r.up:
		r.established++
	case !up && r.up:
		r.log = append(r.log, "down")
	}
	r.up = up
}

func (r *testRouter) onUpdate(paths []*apiutil.Path, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		n, ok := p.Nlri.(*bgppkt.IPAddrPrefix)
		switch {
		case ok && p.Withdrawal:
			r.withdrawals[n.Prefix]++
			r.log = append(r.log, "withdraw "+n.Prefix.String())
		case ok && slices.Contains(toRoute(p).communities, CommunityGracefulShutdown):
			r.marked[n.Prefix]++
		}
	}
}

// markedCount is how many paths arrived with GRACEFUL_SHUTDOWN.
func (r *testRouter) markedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.marked {
		n += c
	}
	return n
}

func (r *testRouter) establishedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.established
}

// routes lists what the router learned from the speaker.
func (r *testRouter) routes(t *testing.T) map[netip.Prefix]route {
	t.Helper()
	out := map[netip.Prefix]route{}
	for _, fam := range []bgppkt.Family{bgppkt.RF_IPv4_UC, bgppkt.RF_IPv6_UC} {
		err := r.srv.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: fam},
			func(n bgppkt.NLRI, paths []*apiutil.Path) {
				if p, ok := n.(*bgppkt.IPAddrPrefix); ok && len(paths) > 0 {
					out[p.Prefix] = toRoute(paths[0])
				}
			})
		must(t, err)
	}
	return out
}

func toRoute(p *apiutil.Path) route {
	var rt route
	for _, a := range p.Attrs {
		switch v := a.(type) {
		case *bgppkt.PathAttributeNextHop:
			rt.nextHop = v.Value
		case *bgppkt.PathAttributeMpReachNLRI:
			rt.nextHop = v.Nexthop
		case *bgppkt.PathAttributeCommunities:
			rt.communities = slices.Clone(v.Value)
		case *bgppkt.PathAttributeLargeCommunities:
			for _, l := range v.Values {
				rt.large = append(rt.large, [3]uint32{l.ASN, l.LocalData1, l.LocalData2})
			}
		case *bgppkt.PathAttributeLocalPref:
			rt.localPref = v.Value
		case *bgppkt.PathAttributeExtendedCommunities:
			for _, ec := range v.Value {
				if lb, ok := ec.(*bgppkt.LinkBandwidthExtended); ok {
					rt.linkBW, rt.linkAS = lb.Bandwidth, lb.AS
				}
			}
		}
	}
	return rt
}

func (rt route) String() string {
	return fmt.Sprintf("nh=%s comm=%v large=%v lp=%d lb=%d:%g", rt.nextHop, rt.communities, rt.large, rt.localPref, rt.linkAS, rt.linkBW)
}

// freePort finds a TCP port free on addr.
func freePort(t *testing.T, addr string) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s (loopback aliases needed): %v", addr, err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
