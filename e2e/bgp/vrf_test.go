package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// vrfName is the nodes' VRF in TestVRFUplinks; missingVRF exists on no
// node.
const (
	vrfName    = "red"
	missingVRF = "blue"
)

// TestVRFMissing: a BGPPeer naming a VRF no node has opens no session;
// every node's SpeakerStatus says why, naming the VRF and the node, as
// do the BGPPeer's SessionsConfigured condition and a SessionProblem
// event on it, and the default-VRF peer of the same nodes stays established throughout.
func TestVRFMissing(t *testing.T) {
	l, h := suite.Herald(t)
	defaultVRF := nodeAddrs(l, false)
	waitSessions(t, l, 60*time.Second, defaultVRF...)
	before := sessionsUp(t, l)
	apply(t, h, fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router-missing-vrf}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: '%s'
  vrf: %s
  connectTime: 2s
`, lab.NodeASN, lab.RouterASN, lab.RouterIPv6, missingVRF), "bgppeer/router-missing-vrf")
	checkMissingVRF(t, l)
	// the BGPPeer carries it too, as a Warning event per node
	msg := waitEvent(t, l, "BGPPeer", "router-missing-vrf", "SessionProblem", "VRF "+missingVRF+" does not exist on node")
	t.Logf("BGPPeer event: %q", msg)
	// and in its status, for every node
	var cond string
	labkit.EventuallyWhy(t, 30*time.Second, "BGPPeer router-missing-vrf SessionsConfigured False on every node", func() (bool, string) {
		p, err := heraldClient(t, l).HeraldV1beta1().BGPPeers().Get(context.Background(), "router-missing-vrf", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1beta1.ConditionSessionsConfigured {
				cond = string(c.Status) + " " + c.Reason + ": " + c.Message
			}
		}
		ok := strings.HasPrefix(cond, "False ")
		for _, n := range allNodes(l) {
			ok = ok && strings.Contains(cond, n+": VRF "+missingVRF+" does not exist on node "+n)
		}
		return ok, cond
	})
	t.Logf("BGPPeer condition: %s", cond)
	// the router's default-VRF sessions never went down: FRR counts
	// each session's drops
	for a, p := range neighbors(t, l) {
		if n, ok := before[a]; ok && (!p.Up() || p.Dropped != n) {
			t.Errorf("session with %s: %s, dropped %d times (%d before)", a, p.State, p.Dropped, n)
		}
	}
	waitSessions(t, l, 10*time.Second, defaultVRF...)
}

// sessionsUp maps the router's established sessions to their drop
// counts.
func sessionsUp(t *testing.T, l *lab.Lab) map[netip.Addr]int {
	t.Helper()
	out := map[netip.Addr]int{}
	for a, p := range neighbors(t, l) {
		if p.Up() {
			out[a] = p.Dropped
		}
	}
	return out
}

// TestVRFUplinks: every node's second uplink to the router is enslaved
// to VRF red. A BGPPeer naming red peers over it: the router learns the
// Service's routes with the nodes' VRF addresses as next hops (IPv4 and
// IPv6) and HTTP from the external client, arriving on the VRF uplinks,
// reaches a pod; the default-VRF peer stays established. Skipped on a
// kernel without the VRF driver.
func TestVRFUplinks(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	t.Cleanup(func() {
		if err := l.RemoveVRFUplinks(context.Background()); err != nil {
			t.Error(err)
		}
		if err := l.ReconfigureRouter(context.Background(), lab.FRR, lab.BGPOptions{}); err != nil {
			t.Errorf("restoring the default router: %v", err)
		}
	})
	if err := l.AddVRFUplinks(ctx, vrfName); errors.Is(err, lab.ErrNoVRFDriver) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	if err := l.ReconfigureRouter(ctx, lab.FRR, lab.BGPOptions{}); err != nil {
		t.Fatal(err)
	}
	defaultVRF := nodeAddrs(l, false)
	waitSessions(t, l, 60*time.Second, defaultVRF...)
	apply(t, h, fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router-vrf}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: %s
  vrf: %s
  holdTime: 9s
  keepaliveTime: 3s
  connectTime: 2s
---
apiVersion: herald.dev/v1beta1
kind: BGPAdvertisement
metadata: {name: vrf}
spec:
  ipAddressPools: [%s]
  peers: [router-vrf]
`, lab.NodeASN, lab.RouterASN, lab.RouterVRFIPv4, vrfName, poolAttrs), "bgppeer/router-vrf", "bgpadvertisement/vrf")
	var inVRF4, inVRF6 []netip.Addr
	for _, n := range l.Nodes() {
		inVRF4 = append(inVRF4, lab.NodeVRFIPv4(n.Index))
		inVRF6 = append(inVRF6, lab.NodeVRFIPv6(n.Index))
	}
	start := time.Now()
	waitSessions(t, l, 60*time.Second, append(slices.Clone(defaultVRF), inVRF4...)...)
	t.Logf("VRF sessions up %s after the BGPPeer", time.Since(start).Round(time.Millisecond))

	_, ips := suite.Service(t, "vrf", poolAttrs, dualStack, allNodes(l)...)
	for i, want := range [][]netip.Addr{inVRF4, inVRF6} {
		r := waitFIBVia(t, l, host(ips[i]), want)
		t.Logf("router FIB for %s: %v", ips[i], r.FIB)
	}
	for _, ip := range ips {
		var answer lab.PodAnswer
		labkit.EventuallyWhy(t, 30*time.Second, "an HTTP answer through "+ip.String(), func() (bool, string) {
			var err error
			answer, err = l.HTTPGet(ctx, lab.External, ip, 80)
			return err == nil, fmt.Sprint(err)
		})
		t.Logf("http://%s answered by %s on %s", netip.AddrPortFrom(ip, 80), answer.Pod, answer.Node)
	}
	waitSessions(t, l, 10*time.Second, append(slices.Clone(defaultVRF), inVRF4...)...)
}

// checkMissingVRF waits until every node's SpeakerStatus says the peer
// naming missingVRF is not configured because the node has no such VRF.
func checkMissingVRF(t *testing.T, l *lab.Lab) {
	t.Helper()
	hc := heraldClient(t, l)
	labkit.EventuallyWhy(t, 60*time.Second, "SpeakerStatus of router-missing-vrf", func() (bool, string) {
		var got []string
		ok := true
		for _, n := range allNodes(l) {
			s := sessionStatus(hc, n, "router-missing-vrf")
			got = append(got, fmt.Sprintf("%s: %s %q", n, s.State, s.Message))
			want := fmt.Sprintf("VRF %s does not exist on node %s", missingVRF, n)
			ok = ok && s.State == "NotConfigured" && strings.Contains(s.Message, want)
		}
		return ok, strings.Join(got, "; ")
	})
	t.Logf("node1: %q", sessionStatus(hc, "node1", "router-missing-vrf").Message)
}

// waitFIBVia waits until the router's kernel routes for prefix lead to
// exactly the next hops want (the nodes' VRF addresses, which the lab
// does not map to node names).
func waitFIBVia(t *testing.T, l *lab.Lab, prefix netip.Prefix, want []netip.Addr) lab.Route {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	var r lab.Route
	labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("router FIB for %s via %v", prefix, want), func() (bool, string) {
		r = route(t, l, prefix)
		var got []netip.Addr
		for _, nh := range r.FIB {
			got = append(got, nh.Addr.WithZone(""))
		}
		slices.SortFunc(got, netip.Addr.Compare)
		return slices.Equal(got, want), fmt.Sprintf("FIB via %v", got)
	})
	return r
}
