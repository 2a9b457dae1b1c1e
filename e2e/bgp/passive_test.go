package bgp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestPassivePeer: the router dials the nodes (static neighbors that
// connect, beside its listen ranges for the node subnet) and the BGPPeer
// is passive: no speaker dials, each listens on its node's address port
// 179 only while the peer is passive, the sessions come up from the
// router's side, the route reaches the router's FIB and HTTP from the
// external client reaches the pod. The speakers get NET_BIND_SERVICE for
// port 179 (Helm value speaker.bgpListen.netBindService).
func TestPassivePeer(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	grantBindService(t, h)
	for _, n := range l.Nodes() {
		if ls := bgpListeners(t, l, n.Name); ls != "" {
			t.Errorf("%s listens on 179 with no passive peer: %s", n.Name, ls)
		}
	}
	var dialing []lab.StaticNeighbor
	for _, n := range allNodes(l) {
		dialing = append(dialing, lab.StaticNeighbor{Node: n, RouterDials: true})
	}
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{StaticNeighbors: dialing})
	apply(t, h, peerYAML(peerV4, "passive: true"))
	start := time.Now()
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	t.Logf("passive: every session up %s after the BGPPeer changed", time.Since(start).Round(time.Millisecond))
	for a, p := range neighbors(t, l) {
		if p.Up() && p.Dynamic {
			t.Errorf("session with %s came through the listen range, want the router's static neighbor", a)
		}
	}
	for _, n := range l.Nodes() {
		ls := bgpListeners(t, l, n.Name)
		if !strings.Contains(ls, n.IPv4.String()+":179") || strings.Contains(ls, "0.0.0.0:179") || strings.Contains(ls, "*:179") {
			t.Errorf("%s: BGP listeners %q, want the node's own addresses only", n.Name, ls)
		}
	}
	all := allNodes(l)
	_, ips := suite.Service(t, "passive", poolMain, nil, all...)
	waitFIB(t, l, host(ips[0]), all...)
	var answer lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+ips[0].String(), func() bool {
		var err error
		answer, err = l.HTTPGet(ctx, lab.External, ips[0], 80)
		return err == nil
	})
	t.Logf("http://%s answered by %s on %s", ips[0], answer.Pod, answer.Node)

	// back to an active peer: the listeners close
	if err := h.Apply(ctx, baseConfig()); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 30*time.Second, "no BGP listener left", func() bool {
		for _, n := range l.Nodes() {
			if bgpListeners(t, l, n.Name) != "" {
				return false
			}
		}
		return true
	})
}

// grantBindService adds NET_BIND_SERVICE to the speakers, as the Helm
// value speaker.bgpListen.netBindService does, and takes it away at the
// end of the test; each waits for the speakers to roll out.
func grantBindService(t testing.TB, h *deploy.Herald) {
	t.Helper()
	patch := func(op string) error {
		ctx := context.Background()
		p := `[{"op":"add","path":"/spec/template/spec/containers/0/securityContext/capabilities/add/-","value":"NET_BIND_SERVICE"}]`
		if op == "remove" {
			p = `[{"op":"test","path":"/spec/template/spec/containers/0/securityContext/capabilities/add/1","value":"NET_BIND_SERVICE"},` +
				`{"op":"remove","path":"/spec/template/spec/containers/0/securityContext/capabilities/add/1"}]`
		}
		if _, err := h.Kubectl(ctx, "-n", deploy.Namespace, "patch", "daemonset", deploy.SpeakerDaemonSet, "--type=json", "-p", p); err != nil {
			return err
		}
		return h.WaitReady(ctx, 3*time.Minute)
	}
	t.Cleanup(func() {
		if err := patch("remove"); err != nil {
			t.Errorf("taking NET_BIND_SERVICE back: %v", err)
		}
	})
	start := time.Now()
	if err := patch("add"); err != nil {
		t.Fatal(err)
	}
	t.Logf("speakers rolled out with NET_BIND_SERVICE in %s", time.Since(start).Round(time.Second))
}

// bgpListeners lists the TCP listeners on port 179 in node's namespace
// ("" when none).
func bgpListeners(t *testing.T, l *lab.Lab, node string) string {
	t.Helper()
	out, err := l.Exec(context.Background(), node, "ss", "-Hltn", "sport = :179")
	if err != nil {
		t.Fatalf("ss on %s: %v", node, err)
	}
	var ls []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			ls = append(ls, f[3])
		}
	}
	return strings.Join(ls, " ")
}
