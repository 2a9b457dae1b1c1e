package bgp

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"google.golang.org/protobuf/proto"
)

// statementText renders a statement in one line for comparisons.
func statementText(st *api.Statement) string {
	c, a := st.GetConditions(), st.GetActions()
	s := fmt.Sprintf("%s&%s->%s", c.GetPrefixSet().GetName(), c.GetNeighborSet().GetName(), a.GetRouteAction())
	if a.GetCommunity() != nil {
		s += " comm=" + strings.Join(a.GetCommunity().GetCommunities(), ",")
	}
	if a.GetLargeCommunity() != nil {
		s += " large=" + strings.Join(a.GetLargeCommunity().GetCommunities(), ",")
	}
	if a.GetLocalPref() != nil {
		s += fmt.Sprintf(" lp=%d", a.GetLocalPref().GetValue())
	}
	if a.GetExtCommunity() != nil {
		s += " ext=" + strings.Join(a.GetExtCommunity().GetCommunities(), ",")
	}
	if a.GetNexthop() != nil {
		s += " nh=" + a.GetNexthop().GetAddress()
	}
	return s
}

func setText(ds *api.DefinedSet) string {
	items := ds.GetList()
	for _, p := range ds.GetPrefixes() {
		items = append(items, fmt.Sprintf("%s[%d..%d]", p.GetIpPrefix(), p.GetMaskLengthMin(), p.GetMaskLengthMax()))
	}
	return ds.GetName() + "=" + strings.Join(items, ",")
}

func TestBuildPolicies(t *testing.T) {
	comm := attrs{communities: []uint32{64512<<16 | 7}}
	ibgp := attrs{communities: []uint32{64512<<16 | 8}, large: [][3]uint32{{64512, 1, 2}}, localPref: 250, hasLocalPref: true}
	deliveries := map[netip.Prefix]delivery{
		vip4:  {peerA: comm, peerB: ibgp},
		vip4b: {peerA: comm, peerB: ibgp}, // same delivery as vip4: same prefix set
		vip6:  {peerA: {}, peerC6: {}},
		netip.MustParsePrefix("198.51.100.140/32"): {peerC6: {nextHop: nodeV4}},
	}
	req := buildPolicies(deliveries)
	var sets []string
	for _, ds := range req.GetDefinedSets() {
		sets = append(sets, setText(ds))
	}
	wantSets := []string{
		"herald-p0-v4=198.51.100.130/32[32..32],198.51.100.131/32[32..32]",
		"herald-n0-0=198.51.100.1", "herald-n0-1=198.51.100.2",
		"herald-p1-v6=2001:db8:ff::10/128[128..128]",
		"herald-n1-0=198.51.100.1,2001:db8:1::1",
		"herald-p2-v4=198.51.100.140/32[32..32]",
		"herald-n2-0=2001:db8:1::1",
	}
	if got := strings.Join(sets, "\n"); got != strings.Join(wantSets, "\n") {
		t.Errorf("defined sets:\n%s\nwant:\n%s", got, strings.Join(wantSets, "\n"))
	}
	export := req.GetPolicies()[0]
	var sts []string
	for _, st := range export.GetStatements() {
		sts = append(sts, statementText(st))
	}
	wantSts := []string{
		"herald-p0-v4&herald-n0-0->ROUTE_ACTION_ACCEPT comm=64512:7",
		"herald-p0-v4&herald-n0-1->ROUTE_ACTION_ACCEPT comm=64512:8 large=64512:1:2 lp=250",
		"herald-p1-v6&herald-n1-0->ROUTE_ACTION_ACCEPT",
		"herald-p2-v4&herald-n2-0->ROUTE_ACTION_ACCEPT nh=198.51.100.11",
	}
	if export.GetName() != exportPolicyName || strings.Join(sts, "\n") != strings.Join(wantSts, "\n") {
		t.Errorf("export statements:\n%s\nwant:\n%s", strings.Join(sts, "\n"), strings.Join(wantSts, "\n"))
	}
	imp := req.GetPolicies()[1]
	if imp.GetName() != importPolicyName || len(imp.GetStatements()) != 1 ||
		imp.GetStatements()[0].GetConditions().GetRouteType() != api.Conditions_ROUTE_TYPE_LOCAL {
		t.Errorf("import policy must accept local paths only: %v", imp)
	}
	for range 20 { // map order must not leak into the output
		if !proto.Equal(req, buildPolicies(deliveries)) {
			t.Fatal("buildPolicies is not deterministic")
		}
	}
}

func TestBuildPoliciesEmpty(t *testing.T) {
	req := buildPolicies(nil)
	if len(req.GetDefinedSets()) != 0 || len(req.GetPolicies()) != 2 || len(req.GetPolicies()[0].GetStatements()) != 0 {
		t.Errorf("no deliveries: an empty export policy (default reject) and the import policy: %v", req)
	}
	as := globalAssignments()
	for _, a := range as {
		if a.GetDefaultAction() != api.RouteAction_ROUTE_ACTION_REJECT {
			t.Errorf("assignment %v must default to reject", a)
		}
	}
}

func TestPeerConfig(t *testing.T) {
	s := norm(t, sess("rtr1", "198.51.100.1", func(s *Session) {
		s.PeerPort = 1179
		s.SourceAddress = netip.MustParseAddr("198.51.100.11")
		s.Password = "secret"
		s.EBGPMultiHop = true
		s.GracefulRestart = true
		s.HoldTime = 9 * time.Second
		s.BFD = &BFD{ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 200 * time.Millisecond, DetectMultiplier: 4}
		s.Families = []Family{IPv4Unicast, IPv6Unicast}
	}))
	p := peerConfig(s, false)
	c := p.GetConf()
	if c.GetNeighborAddress() != "198.51.100.1" || c.GetPeerAsn() != 64513 || c.GetLocalAsn() != 64512 ||
		c.GetAuthPassword() != "secret" || c.GetDescription() != "rtr1" {
		t.Errorf("conf: %v", c)
	}
	if tr := p.GetTransport(); tr.GetRemotePort() != 1179 || tr.GetLocalAddress() != "198.51.100.11" || tr.GetPassiveMode() {
		t.Errorf("transport: %v", tr)
	}
	tm := p.GetTimers().GetConfig()
	if tm.GetHoldTime() != 9 || tm.GetKeepaliveInterval() != 3 || tm.GetConnectRetry() != 5 || tm.GetIdleHoldTimeAfterReset() != 5 {
		t.Errorf("timers: %v", tm)
	}
	if mh := p.GetEbgpMultihop(); !mh.GetEnabled() || mh.GetMultihopTtl() != 255 {
		t.Errorf("multihop: %v", mh)
	}
	if gr := p.GetGracefulRestart(); !gr.GetEnabled() || !gr.GetNotificationEnabled() || gr.GetRestartTime() != 120 ||
		gr.GetDeferralTime() != 1 || gr.GetLocalRestarting() {
		t.Errorf("graceful restart: %v", gr)
	}
	if gr := peerConfig(s, true).GetGracefulRestart(); !gr.GetLocalRestarting() || gr.GetDeferralTime() != 1 {
		t.Errorf("graceful restart of a restarted server: %v", gr)
	}
	if len(p.GetAfiSafis()) != 2 || p.GetAfiSafis()[1].GetConfig().GetFamily().GetAfi() != api.Family_AFI_IP6 ||
		!p.GetAfiSafis()[1].GetMpGracefulRestart().GetConfig().GetEnabled() {
		t.Errorf("afi-safis: %v", p.GetAfiSafis())
	}
	b := p.GetBfd()
	if !b.GetEnabled() || b.GetRequiredMinimumReceive() != 100000 || b.GetDesiredMinimumTxInterval() != 200000 || b.GetDetectionMultiplier() != 4 {
		t.Errorf("bfd (microseconds): %v", b)
	}
	v6over4 := peerConfig(norm(t, sess("r6", "198.51.100.1", func(s *Session) { s.Families, s.FamiliesChosen = []Family{IPv6Unicast}, true })), false)
	if afs := v6over4.GetAfiSafis(); len(afs) != 1 || afs[0].GetConfig().GetFamily().GetAfi() != api.Family_AFI_IP6 {
		t.Errorf("an IPv4 session chosen to carry IPv6 only: afi-safis %v", afs)
	}
	plain := peerConfig(norm(t, sess("r", "198.51.100.1")), true)
	if plain.GetBfd().GetEnabled() || plain.GetEbgpMultihop() != nil || plain.GetGracefulRestart() != nil || plain.GetTransport().GetLocalAddress() != "" {
		t.Errorf("defaults must leave BFD, multihop, GR and the source address off: %v", plain)
	}
}

func TestStateNames(t *testing.T) {
	if got := downReason(api.PeerState_DISCONNECT_REASON_HOLD_TIMER_EXPIRED, ""); got != "hold_timer_expired" {
		t.Errorf("reason without message: %q", got)
	}
	if got := downReason(api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED, "notification-received "+bgppkt.NewNotificationErrorCode(bgppkt.BGP_ERROR_CEASE, 10).String()); !strings.HasPrefix(got, "BFD down on the peer") {
		t.Errorf("router BFD cease: %q", got)
	}
	withPW := Session{PeerAddress: netip.MustParseAddr("198.51.100.1"), PeerPort: 179, Password: "pw"}
	if got := connectHint("dial tcp 198.51.100.1:179: i/o timeout", withPW); !strings.Contains(got, "TCP MD5") {
		t.Errorf("hint: %q", got)
	}
	if got := connectHint("connect: connection refused", withPW); got != "connect: connection refused" {
		t.Errorf("no hint for a refused connection: %q", got)
	}
	local := Session{PeerAddress: netip.MustParseAddr("127.0.0.1"), PeerPort: 1790}
	if got := connectHint("dial tcp 127.0.0.1:1790: connect: connection refused", local); !strings.Contains(got, "127.0.0.1 is this node's own BGP daemon: nothing listens there on port 1790") {
		t.Errorf("loopback peer refused: %q", got)
	}
	if got := connectHint("dial tcp 127.0.0.1:1790: i/o timeout", local); strings.Contains(got, "(") {
		t.Errorf("loopback peer timing out: %q", got)
	}
}

// TestDeliveryKeyIsTheFmtForm: the keys built by hand are those fmt gives
// (the form the tests and the grouping were written against), for random
// attributes.
func TestDeliveryKeyIsTheFmtForm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	fmtAttrs := func(a attrs) string {
		lp := "-"
		if a.hasLocalPref {
			lp = fmt.Sprint(a.localPref)
		}
		return fmt.Sprintf("c=%v l=%v lp=%s nh=%s", a.communities, a.large, lp, a.nextHop)
	}
	for range 1000 {
		d := delivery{}
		for _, peer := range []netip.Addr{peerA, peerB, peerC6} {
			if r.IntN(2) == 0 {
				continue
			}
			var a attrs
			for range r.IntN(3) {
				a.communities = append(a.communities, r.Uint32())
			}
			for range r.IntN(3) {
				a.large = append(a.large, [3]uint32{r.Uint32(), r.Uint32(), r.Uint32()})
			}
			a.localPref, a.hasLocalPref = r.Uint32(), r.IntN(2) == 0
			if r.IntN(2) == 0 {
				a.nextHop = []netip.Addr{nodeV4, nodeV6}[r.IntN(2)]
			}
			d[peer] = a
		}
		var want strings.Builder
		for _, peer := range []netip.Addr{peerA, peerB, peerC6} { // in address order
			if a, ok := d[peer]; ok {
				fmt.Fprintf(&want, "%s{%s};", peer, fmtAttrs(a))
			}
		}
		if got := deliveryKey(d); got != want.String() {
			t.Fatalf("deliveryKey\n %s\nwant\n %s", got, want.String())
		}
	}
}
