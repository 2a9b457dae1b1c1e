package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-lb/herald/test/labkit"
)

// frrPath is the part of FRR's "show bgp ... <prefix> json" the test reads.
type frrPath struct {
	Community struct {
		String string `json:"string"`
	} `json:"community"`
	LargeCommunity struct {
		String string `json:"string"`
	} `json:"largeCommunity"`
	Nexthops []struct {
		IP    string `json:"ip"`
		Scope string `json:"scope"`
	} `json:"nexthops"`
	Peer struct {
		PeerID string `json:"peerId"`
	} `json:"peer"`
	Stale bool `json:"stale"`
}

type frrNeighbor struct {
	BgpState               string `json:"bgpState"`
	ConnectionsEstablished int    `json:"connectionsEstablished"`
}

type frr struct {
	t   *testing.T
	dir string
}

func (f frr) json(v any, cmd string) error {
	out, err := labkit.FRR{Dir: f.dir}.CLI(context.Background(), cmd)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// paths returns FRR's paths for a prefix (none when it has no route).
func (f frr) paths(p netip.Prefix) []frrPath {
	fam := "ipv4"
	if p.Addr().Is6() {
		fam = "ipv6"
	}
	var r struct {
		Paths []frrPath `json:"paths"`
	}
	if err := f.json(&r, fmt.Sprintf("show bgp %s unicast %s json", fam, p)); err != nil {
		f.t.Fatal(err)
	}
	return r.Paths
}

func (f frr) pathFrom(p netip.Prefix, peer string) (frrPath, bool) {
	for _, fp := range f.paths(p) {
		if fp.Peer.PeerID == peer {
			return fp, true
		}
	}
	return frrPath{}, false
}

func (f frr) neighbor(addr string) frrNeighbor {
	m := map[string]frrNeighbor{}
	if err := f.json(&m, "show bgp neighbors "+addr+" json"); err != nil {
		f.t.Fatal(err)
	}
	return m[addr]
}

func (f frr) bfdStatus(peer string) string {
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if err := f.json(&peers, "show bfd peers json"); err != nil {
		f.t.Fatal(err)
	}
	for _, p := range peers {
		if p.Peer == peer {
			return p.Status
		}
	}
	return "absent"
}

// TestFRRSpeakerSide is the speaker half of TestFRR; it runs only in the
// child process TestFRR starts in the speaker namespace.
func TestFRRSpeakerSide(t *testing.T) {
	raw := os.Getenv(frrEnv)
	if raw == "" {
		t.Skip("run by TestFRR in its lab")
	}
	var lab frrLab
	must(t, json.Unmarshal([]byte(raw), &lab))
	f := frr{t: t, dir: lab.VtyDir}
	reg := prometheus.NewRegistry()
	s, events := newTestSpeaker(t, reg)

	const secret = "herald-secret"
	c1 := uint32(64512<<16 | 100)
	rtr := Session{Name: "rtr", PeerAddress: netip.MustParseAddr("198.51.100.1"), MyASN: speakerASN, PeerASN: routerASN,
		HoldTime: 9 * time.Second, ConnectTime: 2 * time.Second, Families: []Family{IPv4Unicast, IPv6Unicast}}
	md5 := Session{Name: "rtr-md5", PeerAddress: netip.MustParseAddr("198.51.100.2"), SourceAddress: netip.MustParseAddr("198.51.100.12"),
		MyASN: speakerASN, PeerASN: routerASN, HoldTime: 9 * time.Second, ConnectTime: 3 * time.Second, Password: secret}
	d := Desired{NodeIPv4: netip.MustParseAddr("198.51.100.11"), NodeIPv6: netip.MustParseAddr("2001:db8:1::11"),
		Sessions: []Session{rtr, md5},
		Paths: []Path{
			{Prefix: vip4, Communities: []uint32{c1}, LargeCommunities: [][3]uint32{{64512, 7, 9}}},
			{Prefix: vip6, Peers: []string{"rtr"}},
		}}

	start := time.Now()
	apply(t, s, d)
	t.Logf("MEASURED time to Established (both sessions, MD5 on one): %s", waitUp(t, s, "rtr", "rtr-md5"))
	labkit.EventuallyWhy(t, waitLong, "FRR has the /32 from both sessions and the /128", func() (bool, string) {
		_, a := f.pathFrom(vip4, "198.51.100.11")
		_, b := f.pathFrom(vip4, "198.51.100.12")
		_, c := f.pathFrom(vip6, "198.51.100.11")
		return a && b && c, fmt.Sprintf("/32 via .11 %v, via .12 %v, /128 %v", a, b, c)
	})
	t.Logf("MEASURED time from first Apply to the routes in FRR: %s", time.Since(start))
	checkFRRAttributes(t, f)

	// Adding a path: in FRR quickly, no session reset.
	vip4c := netip.MustParsePrefix("198.51.100.132/32")
	d.Paths = append(d.Paths, Path{Prefix: vip4c, Peers: []string{"rtr"}})
	t0 := time.Now()
	apply(t, s, d)
	labkit.EventuallyWhy(t, waitLong, "FRR has the added path", func() (bool, string) {
		_, ok := f.pathFrom(vip4c, "198.51.100.11")
		return ok, ""
	})
	t.Logf("MEASURED time from Apply (path added) to the route in FRR: %s", time.Since(t0))
	if n := f.neighbor("198.51.100.11"); n.ConnectionsEstablished != 1 {
		t.Errorf("adding a path reset the session: FRR counts %d connections", n.ConnectionsEstablished)
	}

	checkWrongPassword(t, f, s, &d)
	checkBFD(t, f, s, events, &d, reg)
	checkLinkBackAndShutdown(t, f, s)
	checkGracefulRestart(t, f, md5)
}

func checkFRRAttributes(t *testing.T, f frr) {
	t.Helper()
	p, _ := f.pathFrom(vip4, "198.51.100.11")
	if p.Community.String != "64512:100" || p.LargeCommunity.String != "64512:7:9" {
		t.Errorf("FRR /32 attributes: community %q, large %q", p.Community.String, p.LargeCommunity.String)
	}
	if len(p.Nexthops) == 0 || p.Nexthops[0].IP != "198.51.100.11" {
		t.Errorf("FRR /32 next hop: %+v, want 198.51.100.11", p.Nexthops)
	}
	p6, _ := f.pathFrom(vip6, "198.51.100.11")
	if !slices.ContainsFunc(p6.Nexthops, func(n struct {
		IP    string `json:"ip"`
		Scope string `json:"scope"`
	}) bool {
		return n.IP == "2001:db8:1::11"
	}) {
		t.Errorf("FRR /128 over the IPv4 session: next hops %+v, want the node's global 2001:db8:1::11", p6.Nexthops)
	}
	if _, ok := f.pathFrom(vip6, "198.51.100.12"); ok {
		t.Error("the /128 went to rtr-md5, which does not carry IPv6")
	}
}

// checkWrongPassword changes rtr-md5's password: the session is re-created
// and stays down, with the reason in Sessions; rtr is not disturbed.
func checkWrongPassword(t *testing.T, f frr, s *Speaker, d *Desired) {
	t.Helper()
	d.Sessions[1].Password = "not-the-secret"
	apply(t, s, *d)
	labkit.EventuallyWhy(t, waitLong, "rtr-md5 reports a connect error", func() (bool, string) {
		st := sessionNamed(t, s, "rtr-md5")
		return st.LastError != "", fmt.Sprintf("%+v", st)
	})
	st := sessionNamed(t, s, "rtr-md5")
	t.Logf("wrong password: state %s, reason %q", st.State, st.LastError)
	if st.State == stateEstablished || !strings.Contains(st.LastError, "TCP MD5") {
		t.Errorf("wrong password: %+v", st)
	}
	if n := f.neighbor("198.51.100.12"); n.BgpState == "Established" {
		t.Errorf("FRR established with a wrong password: %+v", n)
	}
	if n := f.neighbor("198.51.100.11"); n.ConnectionsEstablished != 1 {
		t.Errorf("re-creating rtr-md5 disturbed rtr: FRR counts %d connections", n.ConnectionsEstablished)
	}
}

// checkBFD turns BFD on in place, then takes the speaker's link down and
// measures how fast FRR drops the route (its hold time is 9 s).
func checkBFD(t *testing.T, f frr, s *Speaker, events *eventLog, d *Desired, reg *prometheus.Registry) {
	t.Helper()
	d.Sessions[0].BFD = &BFD{ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 100 * time.Millisecond, DetectMultiplier: 3}
	apply(t, s, *d)
	took := labkit.EventuallyWhy(t, waitLong, "BFD up on both sides, BGP established", func() (bool, string) {
		st := sessionNamed(t, s, "rtr")
		fs := f.bfdStatus("198.51.100.11")
		_, route := f.pathFrom(vip4, "198.51.100.11")
		return st.BFD == "Up" && st.State == stateEstablished && fs == "up" && route,
			fmt.Sprintf("speaker BFD %q BGP %s, FRR BFD %q, route %v", st.BFD, st.State, fs, route)
	})
	t.Logf("BFD up %s after Apply; FRR counts %d connections (FRR 8.4 may reset the first BFD-enabled session once)",
		took, f.neighbor("198.51.100.11").ConnectionsEstablished)
	// herald_bgp_bfd_up: 1 for rtr, no series for rtr-md5 (no BFD).
	bfdMetric := func(v int) error {
		want := fmt.Sprintf("# HELP herald_bgp_bfd_up 1 when the BGP session's BFD session is Up, else 0; only for sessions with a BFD profile.\n"+
			"# TYPE herald_bgp_bfd_up gauge\nherald_bgp_bfd_up{peer=\"rtr\"} %d\n", v)
		return testutil.GatherAndCompare(reg, strings.NewReader(want), "herald_bgp_bfd_up")
	}
	if err := bfdMetric(1); err != nil {
		t.Errorf("with BFD up: %v", err)
	}
	downs := events.count("rtr", false)
	t0 := time.Now()
	labkit.MustRun(t, "ip", "link", "set", "eth0", "down")
	gone := labkit.EventuallyWhy(t, waitLong, "FRR drops the speaker's route", func() (bool, string) {
		_, ok := f.pathFrom(vip4, "198.51.100.11")
		return !ok, ""
	})
	t.Logf("MEASURED BFD 100ms x 3: link down on the speaker side -> route gone from FRR in %s (FRR BFD now %q)",
		gone, f.bfdStatus("198.51.100.11"))
	labkit.EventuallyWhy(t, waitLong, "speaker reports rtr down", func() (bool, string) {
		return events.count("rtr", false) > downs, ""
	})
	st := sessionNamed(t, s, "rtr")
	t.Logf("speaker side: rtr down after %s, reason %q", time.Since(t0), st.LastDownReason)
	if !strings.Contains(st.LastDownReason, "BFD") {
		t.Errorf("down reason should name BFD: %q", st.LastDownReason)
	}
	labkit.EventuallyWhy(t, waitLong, "herald_bgp_bfd_up 0 with the link down", func() (bool, string) {
		err := bfdMetric(0)
		return err == nil, fmt.Sprint(err)
	})
}

// checkLinkBackAndShutdown brings the link back, waits for the session and
// the route, then shuts the speaker down: FRR must lose the route.
func checkLinkBackAndShutdown(t *testing.T, f frr, s *Speaker) {
	t.Helper()
	labkit.MustRun(t, "ip", "link", "set", "eth0", "up")
	back := labkit.EventuallyWhy(t, time.Minute, "rtr re-established with its route", func() (bool, string) {
		_, ok := f.pathFrom(vip4, "198.51.100.11")
		return ok && sessionNamed(t, s, "rtr").State == stateEstablished, sessionNamed(t, s, "rtr").State
	})
	t.Logf("MEASURED link up -> session re-established and route back in FRR: %s", back)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	must(t, s.Shutdown(ctx))
	took := time.Since(t0)
	gone := labkit.EventuallyWhy(t, waitLong, "FRR loses the route after Shutdown", func() (bool, string) {
		_, ok := f.pathFrom(vip4, "198.51.100.11")
		return !ok, ""
	})
	t.Logf("Shutdown took %s; route seen gone from FRR %s after it returned", took, gone)
}

// checkGracefulRestart shuts down a speaker whose session has graceful
// restart: FRR keeps the route, marked stale, after the session closed.
func checkGracefulRestart(t *testing.T, f frr, md5 Session) {
	t.Helper()
	s, _ := newTestSpeaker(t, nil)
	md5.Name, md5.GracefulRestart = "rtr-gr", true
	vipGR := netip.MustParsePrefix("198.51.100.140/32")
	apply(t, s, Desired{NodeIPv4: netip.MustParseAddr("198.51.100.11"), Sessions: []Session{md5}, Paths: []Path{{Prefix: vipGR}}})
	waitUp(t, s, "rtr-gr")
	labkit.EventuallyWhy(t, waitLong, "FRR has the path from the GR session", func() (bool, string) {
		_, ok := f.pathFrom(vipGR, "198.51.100.12")
		return ok, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, s.Shutdown(ctx))
	labkit.EventuallyWhy(t, waitLong, "FRR sees the GR session close", func() (bool, string) {
		n := f.neighbor("198.51.100.12")
		return n.BgpState != "Established", n.BgpState
	})
	p, ok := f.pathFrom(vipGR, "198.51.100.12")
	if !ok || !p.Stale {
		t.Errorf("graceful restart: FRR should keep %s as stale after Shutdown: present %v, stale %v", vipGR, ok, p.Stale)
	} else {
		t.Logf("graceful restart: FRR keeps %s, stale, after Shutdown", vipGR)
	}
}
