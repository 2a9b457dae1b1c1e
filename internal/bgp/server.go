package bgp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/server"
	"google.golang.org/protobuf/proto"
)

// gobgp is one running embedded GoBGP server: no gRPC listener, one
// router ID, and a BGP listener only while some session is passive
// (otherwise ListenPort -1: the speaker dials).
type gobgp struct {
	srv         *server.BgpServer
	routerID    netip.Addr
	listen      listenSpec // asked for at start
	listenErr   error      // why the listener asked for could not be opened
	stopWatch   context.CancelFunc
	policy      *api.SetPoliciesRequest // last installed
	policyReady bool                    // global assignments installed
}

// listenSpec is where a server listens for routers: nowhere when port is 0.
type listenSpec struct {
	port  uint16
	addrs string // comma-separated, sorted
}

func (l listenSpec) String() string {
	if l.port == 0 {
		return "none"
	}
	return fmt.Sprintf("%s port %d", l.addrs, l.port)
}

// wantListen is where the server must listen for the planned sessions:
// nowhere unless one of them is passive.
func wantListen(plan sessionPlan, cfg listenConfig, d Desired) listenSpec {
	passive := false
	for _, ss := range [][]Session{plan.add, plan.update, plan.keep} {
		passive = passive || slices.ContainsFunc(ss, func(s Session) bool { return s.Passive })
	}
	if !passive {
		return listenSpec{}
	}
	addrs := cfg.addrs
	if len(addrs) == 0 {
		addrs = []netip.Addr{d.NodeIPv4, d.NodeIPv6}
	}
	var out []string
	for _, a := range addrs {
		if a.IsValid() {
			out = append(out, a.Unmap().String())
		}
	}
	if len(out) == 0 {
		out = []string{"0.0.0.0", "::"} // a node without addresses: every address
	}
	slices.Sort(out)
	return listenSpec{port: cmp.Or(cfg.port, defaultPort), addrs: strings.Join(slices.Compact(out), ",")}
}

// listenConfig is Config's listener settings.
type listenConfig struct {
	port  uint16
	addrs []netip.Addr
}

// startGobgp starts a server and its peer watch. onPeer runs on GoBGP's
// watch goroutine. When the listener cannot be opened (the port is taken
// on that address), the server starts without it and listenErr says why.
func startGobgp(ctx context.Context, h slog.Handler, routerID netip.Addr, asn uint32, listen listenSpec,
	onPeer func(*apiutil.WatchEventMessage_PeerEvent)) (*gobgp, error) {
	srv, err := newGobgp(ctx, h, routerID, asn, listen)
	var listenErr error
	if err != nil && listen.port != 0 {
		listenErr = fmt.Errorf("cannot listen for BGP on %s%s: %w", listen, bindHint(listen, err), err)
		srv, err = newGobgp(ctx, h, routerID, asn, listenSpec{})
	}
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	err = srv.WatchEvent(wctx, server.WatchEventMessageCallbacks{
		OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) { onPeer(ev) },
	}, server.WatchPeer())
	if err != nil {
		cancel()
		srv.Stop()
		return nil, fmt.Errorf("watch GoBGP peers: %w", err)
	}
	g := &gobgp{srv: srv, routerID: routerID, listen: listen, listenErr: listenErr, stopWatch: cancel}
	// Install the policies before any peer exists: nothing learned from a
	// router enters the RIB, and nothing is exported by default.
	if err := g.setPolicies(ctx, buildPolicies(nil)); err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}

// bindHint explains a refused bind of a port below 1024.
func bindHint(l listenSpec, err error) string {
	if l.port >= 1024 || !(errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "permission denied")) {
		return ""
	}
	return " (a port below 1024 needs the capability NET_BIND_SERVICE: Helm value speaker.bgpListen.netBindService, or a --bgp-listen-port of 1024 or more)"
}

// newGobgp starts one GoBGP server, listening as asked.
func newGobgp(ctx context.Context, h slog.Handler, routerID netip.Addr, asn uint32, listen listenSpec) (*server.BgpServer, error) {
	srv := server.NewBgpServer(server.LoggerOption(slog.New(h), nil))
	go srv.Serve() // never returns: GoBGP keeps one goroutine per server
	g := &api.Global{Asn: asn, RouterId: routerID.String(), ListenPort: -1, Families: globalFamilies()}
	if listen.port != 0 {
		g.ListenPort, g.ListenAddresses = int32(listen.port), strings.Split(listen.addrs, ",")
	}
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: g}); err != nil {
		srv.Stop() // closes a listener opened before the failure
		return nil, fmt.Errorf("start GoBGP (router ID %s, AS %d): %w", routerID, asn, err)
	}
	return srv, nil
}

// globalFamilies are the only families Herald advertises. GoBGP keeps two
// RIBs per global family, each of 2,048 map shards; with no family listed
// it takes all of them (about 13 MiB of heap in v4.8.0, for nothing).
func globalFamilies() []uint32 {
	return []uint32{
		uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV4_UNICAST]),
		uint32(oc.AfiSafiTypeToIntMap[oc.AFI_SAFI_TYPE_IPV6_UNICAST]),
	}
}

// stop sends a Cease to every peer and stops the server.
func (g *gobgp) stop() {
	g.srv.Stop()
	g.stopWatch()
}

// setPolicies installs the export and import policies when they changed.
// Policy changes do not reach routes already sent: the caller refreshes
// the peers concerned.
func (g *gobgp) setPolicies(ctx context.Context, req *api.SetPoliciesRequest) error {
	if g.policyReady && proto.Equal(g.policy, req) {
		return nil
	}
	if err := g.srv.SetPolicies(ctx, req); err != nil {
		return fmt.Errorf("set export policy: %w", err)
	}
	g.policy = req
	if g.policyReady {
		return nil
	}
	for _, a := range globalAssignments() {
		if err := g.srv.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: a}); err != nil {
			return fmt.Errorf("assign global %s policy: %w", a.Direction, err)
		}
	}
	g.policyReady = true
	return nil
}

// listPeers returns GoBGP's view of every neighbor, by address.
func (g *gobgp) listPeers(ctx context.Context, advertised bool) (map[netip.Addr]*api.Peer, error) {
	out := map[netip.Addr]*api.Peer{}
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: advertised}, func(p *api.Peer) {
		if a, err := netip.ParseAddr(p.GetState().GetNeighborAddress()); err == nil {
			out[a] = p
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list GoBGP peers: %w", err)
	}
	return out, nil
}
