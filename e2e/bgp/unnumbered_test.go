package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// peerUnnumbered is the base BGPPeer made unnumbered: the nodes peer on
// their point-to-point link to the router, whatever the router's
// external AS.
var peerUnnumbered = fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router}
spec:
  myASN: %d
  dynamicASN: external
  interface: %s
  holdTime: 9s
  keepaliveTime: 3s
  connectTime: 2s
`, lab.NodeASN, lab.UnnumberedNodeIf)

// peerNoInterface names an interface no node has.
const peerNoInterface = `
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: nowhere}
spec:
  myASN: 64513
  dynamicASN: external
  interface: nosuch0
`

// TestUnnumbered: every node has a point-to-point link to the router
// with IPv6 link-local addresses only, and FRR peers on its end of each
// ("neighbor IF interface remote-as external"). The BGPPeer names the
// nodes' interface instead of an address: the sessions come up over the
// link-local addresses, each node's SpeakerStatus names the interface and
// the router's link-local address, the router's FIB holds the IPv4 VIP
// via the link-local (IPv6) next hop of every node (RFC 8950) and HTTP
// from the external client reaches a pod. A BGPPeer naming an interface
// no node has says so in the SpeakerStatus, the other sessions
// unaffected. A paused node's next hop goes when the router's hold timer
// ends, and comes back when it resumes.
func TestUnnumbered(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	if err := l.AddUnnumberedLinks(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.RemoveUnnumberedLinks(context.Background()); err != nil {
			t.Errorf("removing the unnumbered links: %v", err)
		}
	})
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{Unnumbered: true})
	t.Cleanup(func() {
		if t.Failed() {
			logUnnumbered(t, l)
		}
	})
	hc := heraldClient(t, l)
	start := time.Now()
	apply(t, h, peerUnnumbered+"---"+peerNoInterface, "bgppeer/nowhere")
	all := allNodes(l)
	waitSessionStatus(t, hc, "node1", peerV4, func(st v1beta1.BGPSessionStatus) bool { return strings.HasPrefix(st.PeerAddress, "fe80:") })
	t.Logf("unnumbered: node1 learnt the router's link-local address %s after the BGPPeer changed", time.Since(start).Round(time.Millisecond))
	waitUnnumbered(t, l, all)
	t.Logf("unnumbered: every session up %s after the BGPPeer changed", time.Since(start).Round(time.Millisecond))
	waitSessions(t, l, 60*time.Second) // the numbered sessions are gone

	for _, n := range all {
		st := waitSessionStatus(t, hc, n, peerV4, func(st v1beta1.BGPSessionStatus) bool { return st.State == "Established" })
		if st.Interface != lab.UnnumberedNodeIf || !strings.HasPrefix(st.PeerAddress, "fe80:") {
			t.Errorf("%s: SpeakerStatus session %+v, want interface %s and the router's link-local address", n, st, lab.UnnumberedNodeIf)
		}
		gone := waitSessionStatus(t, hc, n, "nowhere", func(st v1beta1.BGPSessionStatus) bool { return st.State == "NotConfigured" })
		if gone.Interface != "nosuch0" || !strings.Contains(gone.Message, "no such interface on this node") {
			t.Errorf("%s: SpeakerStatus of a peer on a missing interface: %+v", n, gone)
		}
	}

	// IPv4 with IPv6 next hops (RFC 8950), IPv6 natively, both via the
	// nodes' link-local addresses on their unnumbered links
	_, ips := suite.Service(t, "unnumbered", poolMain, dualStack, all...)
	for _, ip := range ips {
		prefix := host(ip)
		r := waitFIB(t, l, prefix, all...)
		for _, nh := range r.FIB {
			if !nh.Addr.Is6() || !nh.Addr.IsLinkLocalUnicast() || nh.Dev != lab.UnnumberedRouterIf(nh.Node) {
				t.Errorf("%s: next hop %+v: want a node's link-local address on its unnumbered link", prefix, nh)
			}
		}
		fam := "-4"
		if ip.Is6() {
			fam = "-6"
		}
		fib, _ := l.Exec(ctx, lab.Router, "ip", fam, "route", "show", prefix.String())
		t.Logf("router FIB:\n%s", fib)
		var answer lab.PodAnswer
		labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+ip.String(), func() bool {
			var err error
			answer, err = l.HTTPGet(ctx, lab.External, ip, 80)
			return err == nil
		})
		t.Logf("http://%s answered by %s on %s", ip, answer.Pod, answer.Node)
	}

	prefix := host(ips[0])
	d := nodeLoss(t, l, prefix, "node3")
	t.Logf("node3 paused: its next hop gone from FRR's FIB after %v (hold time 9 s)", d.Round(time.Millisecond))
	waitFIB(t, l, prefix, all...)
}

// nodeLoss pauses node, returns how long the router's FIB kept its next
// hop of prefix (checking that it kept the others'), and resumes it.
func nodeLoss(t testing.TB, l *lab.Lab, prefix netip.Prefix, node string) time.Duration {
	t.Helper()
	others := slices.DeleteFunc(allNodes(l), func(n string) bool { return n == node })
	defer l.AtLabWeight()()
	start := time.Now()
	resume, _, err := l.PauseNode(node)
	if resume != nil {
		t.Cleanup(func() { _ = resume() })
	}
	if err != nil {
		t.Fatal(err)
	}
	var d time.Duration
	labkit.EventuallyWhy(t, 30*time.Second, node+"'s next hop withdrawn", func() (bool, string) {
		via := fibVia(t, l, prefix)
		d = time.Since(start)
		return slices.Equal(via, others), fmt.Sprintf("FIB via %v", via)
	})
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	return d
}

// waitUnnumbered waits until the router's unnumbered session with every
// node is established.
func waitUnnumbered(t testing.TB, l *lab.Lab, nodes []string) {
	t.Helper()
	hc := heraldClient(t, l)
	start, last := time.Now(), ""
	labkit.EventuallyWhy(t, 90*time.Second, "the router's unnumbered sessions", func() (bool, string) {
		states := unnumberedStates(t, l)
		now := fmt.Sprint(states)
		for _, n := range nodes {
			st := sessionStatus(hc, n, peerV4)
			now += fmt.Sprintf("; %s: %s %s %s", n, st.State, st.PeerAddress, st.Message)
		}
		if now != last {
			t.Logf("after %v: the router's unnumbered sessions %s", time.Since(start).Round(10*time.Millisecond), now)
			last = now
		}
		for _, n := range nodes {
			if states[lab.UnnumberedRouterIf(n)] != "Established" {
				return false, fmt.Sprintf("sessions %v", states)
			}
		}
		return true, ""
	})
}

// unnumberedStates maps the router's interface neighbors to their state.
func unnumberedStates(t testing.TB, l *lab.Lab) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := l.RouterCLI(ctx, "show bgp neighbors json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]struct {
		BGPState string `json:"bgpState"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("FRR neighbors: %v", err)
	}
	states := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, "p2p-") {
			states[k] = v.BGPState
		}
	}
	return states
}

// waitSessionStatus waits until node's SpeakerStatus has an entry for
// peer that ok accepts, and returns it.
func waitSessionStatus(t *testing.T, hc versioned.Interface, node, peer string, ok func(v1beta1.BGPSessionStatus) bool) v1beta1.BGPSessionStatus {
	t.Helper()
	var st v1beta1.BGPSessionStatus
	labkit.EventuallyWhy(t, 60*time.Second, node+"'s SpeakerStatus of "+peer, func() (bool, string) {
		st = sessionStatus(hc, node, peer)
		return ok(st), fmt.Sprintf("%+v", st)
	})
	return st
}

// logUnnumbered logs what the router and node1 know of the unnumbered
// link of node1.
func logUnnumbered(t *testing.T, l *lab.Lab) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := l.RouterCLI(ctx, "show bgp neighbors "+lab.UnnumberedRouterIf("node1"))
	t.Logf("router: show bgp neighbors %s (%v):\n%s", lab.UnnumberedRouterIf("node1"), err, out)
	for _, c := range []struct {
		host string
		argv []string
	}{
		{lab.Router, []string{"ip", "-6", "neigh", "show", "dev", lab.UnnumberedRouterIf("node1")}},
		{lab.Router, []string{"ip", "-6", "addr", "show", "dev", lab.UnnumberedRouterIf("node1")}},
		{"node1", []string{"ip", "-6", "neigh", "show", "dev", lab.UnnumberedNodeIf}},
		{"node1", []string{"ip", "-6", "addr", "show", "dev", lab.UnnumberedNodeIf}},
		{"node1", []string{"ss", "-tn", "dport = :179 or sport = :179"}},
	} {
		out, err := l.Exec(ctx, c.host, c.argv...)
		t.Logf("%s: %s (%v):\n%s", c.host, strings.Join(c.argv, " "), err, out)
	}
}
