package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/herald-lb/herald/test/labkit"
)

func TestClassRefusal(t *testing.T) {
	ext := Session{MyASN: 64512, DynamicASN: AnyExternal}
	in := Session{MyASN: 64512, DynamicASN: AnyInternal}
	fixed := Session{MyASN: 64512, PeerASN: 64513}
	cases := []struct {
		s    Session
		asn  uint32
		want string
	}{
		{ext, 64513, ""},
		{ext, 4200000000, ""},
		{ext, 64512, "the router's AS 64512 is myASN (internal) and spec.dynamicASN is external"},
		{in, 64512, ""}, // GoBGP checks internal sessions at OPEN
		{fixed, 64513, ""},
	}
	for _, c := range cases {
		if got := c.s.classRefusal(c.asn); !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s session, router AS %d: %q, want %q", c.s.DynamicASN, c.asn, got, c.want)
		}
	}
	if got := in.badPeerAS(); !strings.Contains(got, "not myASN 64512") || !strings.Contains(got, "spec.dynamicASN is internal") {
		t.Errorf("internal: %q", got)
	}
	if got := fixed.badPeerAS(); !strings.Contains(got, "not peerASN 64513") {
		t.Errorf("fixed: %q", got)
	}
}

func TestNormalizeASN(t *testing.T) {
	base := Session{Name: "a", PeerAddress: netip.MustParseAddr("198.51.100.1"), MyASN: 64512}
	ok := []Session{withASN(base, 64513, FixedASN), withASN(base, 0, AnyInternal), withASN(base, 0, AnyExternal)}
	for _, s := range ok {
		if _, err := normalize(s); err != nil {
			t.Errorf("%d/%s refused: %v", s.PeerASN, s.DynamicASN, err)
		}
	}
	bad := []Session{withASN(base, 0, FixedASN), withASN(base, 64513, AnyExternal), withASN(base, 0, ASNClass(9))}
	for _, s := range bad {
		if _, err := normalize(s); err == nil {
			t.Errorf("%d/%d accepted", s.PeerASN, s.DynamicASN)
		}
	}
	if got := peerASN(withASN(base, 0, AnyInternal)); got != 64512 {
		t.Errorf("internal class expects AS %d in OPEN, want myASN", got)
	}
	if got := peerASN(withASN(base, 0, AnyExternal)); got != 0 {
		t.Errorf("external class expects AS %d in OPEN, want any (0)", got)
	}
	if !withASN(base, 0, AnyInternal).ibgp() || withASN(base, 0, AnyExternal).ibgp() {
		t.Error("ibgp() ignores the class")
	}
}

func TestBindHint(t *testing.T) {
	eacces := fmt.Errorf("listen tcp4 198.51.100.11:179: bind: %w", syscall.EACCES)
	if h := bindHint(listenSpec{port: 179}, eacces); !strings.Contains(h, "NET_BIND_SERVICE") {
		t.Errorf("port 179, permission denied: hint %q", h)
	}
	if h := bindHint(listenSpec{port: 1179}, eacces); h != "" {
		t.Errorf("port 1179: hint %q", h)
	}
	if h := bindHint(listenSpec{port: 179}, syscall.EADDRINUSE); h != "" {
		t.Errorf("address in use: hint %q", h)
	}
}

func withASN(s Session, peer uint32, c ASNClass) Session {
	s.PeerASN, s.DynamicASN = peer, c
	return s
}

func TestWantListen(t *testing.T) {
	d := Desired{NodeIPv4: netip.MustParseAddr("198.51.100.11"), NodeIPv6: netip.MustParseAddr("2001:db8::11")}
	active := sessionPlan{add: []Session{{Name: "a"}}}
	passive := sessionPlan{keep: []Session{{Name: "a"}, {Name: "p", Passive: true}}}
	if l := wantListen(active, listenConfig{}, d); l != (listenSpec{}) {
		t.Errorf("no passive session, listener %s", l)
	}
	if l := wantListen(passive, listenConfig{}, d); l != (listenSpec{port: 179, addrs: "198.51.100.11,2001:db8::11"}) {
		t.Errorf("default listener %s", l)
	}
	cfg := listenConfig{port: 1179, addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	if l := wantListen(passive, cfg, d); l != (listenSpec{port: 1179, addrs: "127.0.0.1"}) {
		t.Errorf("configured listener %s", l)
	}
	if l := wantListen(passive, listenConfig{}, Desired{}); l != (listenSpec{port: 179, addrs: "0.0.0.0,::"}) {
		t.Errorf("listener of a node without addresses %s", l)
	}
}

// The speaker accepts any external AS, reports it, and refuses a router of
// the other class with a message, never counting the session as up.
func TestLoopbackDynamicASN(t *testing.T) {
	r1 := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	r2 := startRouter(t, "127.0.0.4", 4200000000, loSpeaker, speakerASN)
	rIn := startRouter(t, "127.0.0.5", speakerASN, loSpeaker, speakerASN)
	rOut := startRouter(t, "127.0.0.6", routerASN, loSpeaker, speakerASN)
	s, events := newTestSpeaker(t, nil)
	dyn := func(name string, r *testRouter, c ASNClass) Session {
		ss := loSession(name, r, 0)
		ss.DynamicASN = c
		return ss
	}
	apply(t, s, Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6, Sessions: []Session{
		dyn("r1", r1, AnyExternal), dyn("r2", r2, AnyExternal),
		dyn("ibgp-router", rIn, AnyExternal), dyn("ebgp-router", rOut, AnyInternal),
	}})
	waitUp(t, s, "r1", "r2")
	want := map[string]string{"ibgp-router": "is myASN (internal)", "ebgp-router": "is not myASN 64512"}
	labkit.EventuallyWhy(t, waitLong, "ASNs reported and wrong classes refused", func() (bool, string) {
		var got []string
		done := true
		for _, st := range s.Sessions() {
			got = append(got, fmt.Sprintf("%s=%s/%d/%q", st.Name, st.State, st.PeerASN, st.Refused))
			switch st.Name {
			case "r1":
				done = done && st.PeerASN == routerASN
			case "r2":
				done = done && st.PeerASN == 4200000000
			default:
				done = done && strings.Contains(st.Refused, want[st.Name])
			}
		}
		return done, strings.Join(got, " ")
	})
	if n := events.count("ibgp-router", true) + events.count("ebgp-router", true); n != 0 {
		t.Errorf("refused routers counted as up %d times", n)
	}
	if n := rOut.establishedCount(); n != 0 {
		t.Errorf("an external router reached Established %d times with an internal-class session: want a refusal at OPEN", n)
	}
}

// A passive session waits for the router, which reaches the listener the
// speaker opens only while such a session exists.
func TestLoopbackPassive(t *testing.T) {
	port := freePort(t, loSpeaker.String())
	s, err := New(Config{Logger: testLogger(), ListenPort: port, ListenAddresses: []netip.Addr{loSpeaker}})
	must(t, err)
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ss := Session{Name: "r", PeerAddress: netip.MustParseAddr("127.0.0.7"), MyASN: speakerASN, PeerASN: routerASN,
		HoldTime: 9 * time.Second, ConnectTime: 2 * time.Second}
	d := Desired{NodeIPv4: nodeV4, Sessions: []Session{ss}, Paths: []Path{{Prefix: vip4}}}
	apply(t, s, d)
	if l := s.srv.listen; l.port != 0 {
		t.Fatalf("listening (%s) without a passive session", l)
	}
	d.Sessions[0].Passive = true
	apply(t, s, d)
	if l := s.srv.listen; l != (listenSpec{port: port, addrs: loSpeaker.String()}) || s.srv.listenErr != nil {
		t.Fatalf("listener %s (%v)", l, s.srv.listenErr)
	}
	r := startDialingRouter(t, "127.0.0.7", routerASN, loSpeaker, port)
	waitUp(t, s, "r")
	waitRoutes(t, r, "the router learns the VIP", func(rs map[netip.Prefix]route) bool { _, ok := rs[vip4]; return ok })
	r.srv.Stop() // before the server restarts: GoBGP's StartBgp writes globals another server reads
	d.Sessions[0].Passive = false
	apply(t, s, d)
	if l := s.srv.listen; l.port != 0 {
		t.Errorf("still listening (%s) once no session is passive", l)
	}
}

// A listener that cannot be opened refuses the passive sessions only.
func TestLoopbackPassiveListenerTaken(t *testing.T) {
	l, err := net.Listen("tcp", net.JoinHostPort(loSpeaker.String(), "0"))
	if err != nil {
		t.Skip(err)
	}
	defer l.Close()
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	s, err := New(Config{Logger: testLogger(), ListenPort: port, ListenAddresses: []netip.Addr{loSpeaker}})
	must(t, err)
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	mk := func(name, addr string, passive bool) Session {
		return Session{Name: name, PeerAddress: netip.MustParseAddr(addr), MyASN: speakerASN, PeerASN: routerASN, Passive: passive}
	}
	err = s.Apply(context.Background(), Desired{NodeIPv4: nodeV4, Sessions: []Session{mk("active", "127.0.0.8", false), mk("passive", "127.0.0.9", true)}})
	if err == nil || !strings.Contains(err.Error(), "cannot listen for BGP") {
		t.Fatalf("Apply: %v", err)
	}
	for _, st := range s.Sessions() {
		refused := st.State == stateNotConfigured
		if refused != (st.Name == "passive") || refused && !strings.Contains(st.Error, "cannot listen for BGP on 127.0.0.2 port") {
			t.Errorf("%s: %s %q", st.Name, st.State, st.Error)
		}
	}
}

// startDialingRouter is a router that connects to the speaker at
// speaker:port and never listens.
func startDialingRouter(t *testing.T, addr string, asn uint32, speaker netip.Addr, port uint16) *testRouter {
	t.Helper()
	r := &testRouter{addr: netip.MustParseAddr(addr), withdrawals: map[netip.Prefix]int{}}
	r.srv = server.NewBgpServer(server.LoggerOption(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), nil))
	go r.srv.Serve()
	ctx := context.Background()
	must(t, r.srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: addr, ListenPort: -1}}))
	t.Cleanup(r.srv.Stop)
	must(t, r.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: speaker.String(), PeerAsn: speakerASN},
		Transport: &api.Transport{LocalAddress: addr, RemotePort: uint32(port)},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1}},
		AfiSafis:  []*api.AfiSafi{{Config: &api.AfiSafiConfig{Family: apiFamily(IPv4Unicast), Enabled: true}}},
	}}))
	return r
}
