package bgp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// TestNodeRouter: Herald through the node's own router. Every node runs a
// BIRD (as Calico does) that peers with FRR from the node's IPv4 and IPv6
// addresses; Herald's only BGPPeer is that BIRD, over IPv4 loopback
// (127.0.0.1:179 from 127.0.0.2, eBGP), which carries both families. FRR
// learns a dual-stack Service's /32 and /128 from every node's BIRD, AS
// path BIRD's AS then Herald's, next hop the node's address; HTTP from the
// external client reaches a pod through each; the only listener on port
// 179 in each node is BIRD's; and a node's lost link removes its next hop
// at FRR.
func TestNodeRouter(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	// Herald leaves FRR for the node routers first, so that FRR never
	// holds a session from one node address with both
	apply(t, h, fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: router}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: %s
  sourceAddress: %s
  holdTime: 9s
  keepaliveTime: 3s
  connectTime: 2s
`, lab.NodeRouterHeraldASN, lab.NodeASN, lab.NodeRouterAddress, lab.NodeRouterHeraldAddress))
	start := time.Now()
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{NodeRouters: true})
	all := allNodes(l)
	for _, n := range all {
		labkit.EventuallyWhy(t, 60*time.Second, n+": Herald's session with the node router", func() (bool, string) {
			out, err := l.NodeRouterCLI(ctx, n, "show protocols herald")
			return err == nil && strings.Contains(out, "Established"), fmt.Sprintf("%s %v", out, err)
		})
	}
	waitSessions(t, l, 60*time.Second, append(nodeAddrs(l, false), nodeAddrs(l, true)...)...)
	t.Logf("node routers: every session up %s after the change", time.Since(start).Round(time.Millisecond))

	_, ips := suite.Service(t, "noderouter", poolMain, dualStack, all...)
	for i, v6 := range []bool{false, true} {
		r := waitFIB(t, l, host(ips[i]), all...)
		checkNodeRouterPaths(t, l, r, v6)
		var answer lab.PodAnswer
		labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+ips[i].String(), func() bool {
			var err error
			answer, err = l.HTTPGet(ctx, lab.External, ips[i], 80)
			return err == nil
		})
		t.Logf("FRR: %s via %v, AS path %v; http://%s answered by %s on %s", r.Prefix, r.FIBNodes(), r.Paths[0].ASPath, ips[i], answer.Pod, answer.Node)
	}

	for _, n := range all {
		out, err := l.Exec(ctx, n, "ss", "-Hltnp", "sport = :179")
		if err != nil {
			t.Fatalf("ss on %s: %v", n, err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, line := range lines {
			if !strings.Contains(line, `"bird"`) {
				t.Errorf("%s: a listener on port 179 that is not BIRD's: %s", n, line)
			}
		}
		if out == "" {
			t.Errorf("%s: nothing listens on port 179, want the node router", n)
		}
		t.Logf("%s: listening on 179: %s", n, strings.Join(lines, "; "))
	}

	lost := all[len(all)-1]
	d := linkLoss(t, l, host(ips[0]), lost)
	t.Logf("%s's link down: its next hop left FRR's FIB after %s", lost, d.Round(time.Millisecond))
	if err := l.SetLink(ctx, lost, true); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFIB(t, l, host(ips[0]), all...)
	t.Logf("%s's link up: its next hop back in FRR's FIB after %s", lost, time.Since(back).Round(time.Millisecond))
}

// checkNodeRouterPaths: each path of r came from a node's node router, over
// the session of r's family, with the node's address of that family as
// next hop and the AS path of the node router then Herald.
func checkNodeRouterPaths(t *testing.T, l *lab.Lab, r lab.Route, v6 bool) {
	t.Helper()
	for _, p := range r.Paths {
		n, ok := nodeOfPeer(l, p.Peer)
		if !ok {
			t.Fatalf("%s learned from %s, which is no node", r.Prefix, p.Peer)
		}
		want := n.IPv4
		if v6 {
			want = n.IPv6
		}
		if p.Peer != want || !slices.Contains(p.NextHops, want) {
			t.Errorf("%s from %s: next hops %v, want the node's address %s as peer and next hop", r.Prefix, p.Peer, p.NextHops, want)
		}
		if asPath := []uint32{lab.NodeASN, lab.NodeRouterHeraldASN}; !slices.Equal(p.ASPath, asPath) {
			t.Errorf("%s from %s: AS path %v, want %v (the node router's AS, then Herald's)", r.Prefix, p.Peer, p.ASPath, asPath)
		}
	}
}
