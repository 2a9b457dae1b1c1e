package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// TestGracefulRestartKeepsRoutes: with gracefulRestart on the BGPPeer,
// deleting a speaker Pod (the DaemonSet makes a new one) leaves FRR
// holding that node's routes, marked stale, while the speaker is away;
// the new speaker's session (one re-establishment) refreshes them (no
// longer stale, End-of-RIB received for both families), and nothing is
// withdrawn: the router's FIB never drops the node's next hop (the route
// monitor sees no removal), FRR logs no withdrawal from the node, and a
// client requesting the address through the router every 50 ms has no
// failed request. The Service has externalTrafficPolicy Local with its
// only pod on the restarted node, so that node is its only next hop.
func TestGracefulRestartKeepsRoutes(t *testing.T) {
	l, h := suite.Herald(t)
	const victim = "node2"
	peer := nodeAddrs(l, false, victim)[0]
	apply(t, h, peerYAML(peerV4, "gracefulRestart: true"))
	waitGracefulRestart(t, l, nodeAddrs(l, false)...)

	_, ips := suite.Service(t, "gr", poolMain, func(s *corev1.Service) {
		dualStack(s)
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}, victim)
	var prefixes []netip.Prefix
	for _, ip := range ips {
		prefixes = append(prefixes, host(ip))
		waitFIB(t, l, host(ip), victim)
		waitAnswer(t, l, ip, victim)
	}
	log := frrDebugLog(t, l)
	var start time.Time // of the delete
	mon := lab.StartRouteMonitor(t, l)
	nhs := startNexthopMonitor(t, l)
	watch := startPacketWatch(t, l, lab.External, lab.Router, victim)
	// which new flows towards the address node2 NATs to its pod, timed
	watch.add(t, l, victim, "conntrack", "-E", "-e", "NEW", "-p", "tcp", "-d", ips[0].String(), "-o", "timestamp")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("route changes: %+v\nFRR's log about %s:\n%s", mon.Events(t), peer, log.lines(peer.String()))
			logNeighbors(t, l, lab.External, lab.Router, victim)
			if b, err := os.ReadFile(nhs.LogPath); err == nil {
				t.Logf("the router's nexthop objects changed (ip monitor nexthop):\n%s", b)
			}
			watch.log(t)
			if !start.IsZero() {
				logSince(t, filepath.Join(l.Dir(), "logs", "kube-proxy-"+victim+".log"), start.Add(-time.Second))
			}
			out, err := l.Exec(context.Background(), victim, "conntrack", "-L", "-p", "tcp", "-d", ips[0].String())
			t.Logf("%s's conntrack entries towards %s (%v):\n%s", victim, ips[0], err, out)
		}
	})
	forgetFlows(t, l, ips[0], allNodes(l)...)
	client := l.StartHTTPMonitor(t, lab.External, ips[0], 80, 50*time.Millisecond, time.Second)
	sessions := neighbors(t, l)[peer].Established

	start = time.Now()
	old := deleteSpeakerPod(t, h, victim)
	t.Logf("speaker Pod %s on %s deleted at %s", old, victim, start.UTC().Format("15:04:05.000000"))
	waitPathsFrom(t, l, prefixes, victim, peer, "stale while the speaker is away", func(stale bool, n routerconf.Peer) bool {
		return stale && !n.Up()
	})
	t.Logf("FRR keeps %v from %s, stale, %v after the delete", prefixes, victim, time.Since(start).Round(time.Millisecond))
	if _, err := h.StartSpeaker(victim); err != nil {
		t.Fatal(err)
	}
	waitPathsFrom(t, l, prefixes, victim, peer, "refreshed by the new speaker", func(stale bool, n routerconf.Peer) bool {
		if n.Established > sessions+1 {
			t.Fatalf("the session with %s was established %d times since the delete, want once", victim, n.Established-sessions)
		}
		return !stale && n.Up() && n.Established == sessions+1 && slices.Equal(n.EndOfRIB, []string{"ipv4", "ipv6"})
	})
	t.Logf("the new speaker refreshed %v (End-of-RIB received) %v after the delete", prefixes, time.Since(start).Round(time.Millisecond))
	// the router acts on the End-of-RIB (drops what was not refreshed)
	// and its FIB follows asynchronously: watch a while longer
	holdFIB(t, l, prefixes, victim, grSettle)

	checkServed(t, client.Tries(t), start)
	for _, ev := range mon.Events(t) {
		if !slices.Contains(prefixes, ev.Prefix) || ev.At.Before(start) {
			continue
		}
		t.Logf("FIB change at +%v: %s deleted=%v", ev.At.Sub(start).Round(time.Millisecond), ev.Prefix, ev.Deleted)
		if ev.Deleted {
			t.Errorf("the router removed %s from its FIB at +%v", ev.Prefix, ev.At.Sub(start).Round(time.Millisecond))
		}
	}
	for _, p := range prefixes {
		if at, line, ok := log.first(start, withdrawn(peer, p)); ok {
			t.Errorf("FRR received a withdrawal of %s from %s at +%v: %s", p, victim, at.Sub(start).Round(time.Millisecond), line)
		}
	}
}

// grSettle is how long the graceful-restart test keeps watching the
// router after the End-of-RIB.
const grSettle = 3 * time.Second

// holdFIB polls the router's FIB for d, failing as soon as a prefix
// lacks node as next hop.
func holdFIB(t testing.TB, l *lab.Lab, prefixes []netip.Prefix, node string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		for _, p := range prefixes {
			hops, err := l.RouterFIB(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(hops, func(h lab.NextHop) bool { return h.Node == node }) {
				t.Fatalf("%s lost next hop %s after the restart (FIB %+v)", p, node, hops)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitAnswer waits until a request from the external client to vip is
// answered by a pod on node (kube-proxy there has the Service).
func waitAnswer(t testing.TB, l *lab.Lab, vip netip.Addr, node string) {
	t.Helper()
	labkit.Eventually(t, 30*time.Second, "an answer through "+vip.String()+" from "+node, func() bool {
		a, err := l.HTTPGet(context.Background(), lab.External, vip, 80)
		return err == nil && a.Node == node
	})
}

// waitGracefulRestart waits until the router's sessions with peers are
// established with the graceful-restart capability on both sides.
func waitGracefulRestart(t testing.TB, l *lab.Lab, peers ...netip.Addr) {
	t.Helper()
	labkit.Eventually(t, 60*time.Second, fmt.Sprintf("sessions with %v established with graceful restart", peers), func() bool {
		n := neighbors(t, l)
		for _, a := range peers {
			if p := n[a]; !p.Up() || !p.GracefulRestart {
				return false
			}
		}
		return true
	})
}

// deleteSpeakerPod deletes node's speaker Pod (a normal delete: the
// kubelet sends SIGTERM) and returns its name.
func deleteSpeakerPod(t testing.TB, h *deploy.Herald, node string) string {
	t.Helper()
	ctx := context.Background()
	pods, err := h.Pods(ctx, "speaker")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName == node {
			if err := h.Lab.Client().CoreV1().Pods(deploy.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return p.Name
		}
	}
	t.Fatalf("no speaker Pod on %s", node)
	return ""
}

// waitPathsFrom polls the router until done holds for node's path of
// every prefix (whether it is stale) and the router's session with peer,
// failing as soon as a prefix has no path from peer or the FIB loses node
// as next hop.
func waitPathsFrom(t testing.TB, l *lab.Lab, prefixes []netip.Prefix, node string, peer netip.Addr, what string, done func(stale bool, n routerconf.Peer) bool) {
	t.Helper()
	labkit.Eventually(t, 60*time.Second, fmt.Sprintf("paths of %v from %s %s", prefixes, node, what), func() bool {
		n := neighbors(t, l)[peer]
		all := true
		for _, p := range prefixes {
			r := route(t, l, p)
			i := slices.IndexFunc(r.Paths, func(x routerconf.Path) bool { return x.Peer == peer })
			if i < 0 || !slices.Contains(r.FIBNodes(), node) {
				t.Fatalf("%s: the router lost %s's route for %s (paths %+v, FIB via %v)", what, node, p, r.Paths, r.FIBNodes())
			}
			all = all && done(r.Paths[i].Stale, n)
		}
		return all
	})
}

// checkServed fails the test when a request sent after start failed, or
// when too few were sent to tell.
func checkServed(t testing.TB, tries []probe.HTTPTry, start time.Time) {
	t.Helper()
	sent, failed := 0, 0
	for _, try := range tries {
		if try.Sent.Before(start) {
			continue
		}
		sent++
		if !try.OK {
			failed++
			if failed <= 5 {
				t.Errorf("request at +%v failed: %s", try.Sent.Sub(start).Round(time.Millisecond), try.Error)
			}
		}
	}
	t.Logf("client: %d requests through the router during the restart, %d failed", sent, failed)
	if sent < 20 {
		t.Errorf("only %d requests during the restart: the client did not run", sent)
	}
}

// logNeighbors logs the neighbor tables of hosts: a request that failed
// with "no route to host" while the router kept its routes is a neighbor
// (ARP/NDP) resolution that failed on the way, which these show.
func logNeighbors(t testing.TB, l *lab.Lab, hosts ...string) {
	t.Helper()
	for _, h := range hosts {
		out, err := l.Exec(context.Background(), h, "ip", "-s", "neigh", "show")
		t.Logf("neighbors of %s (%v):\n%s", h, err, out)
	}
}

// startNexthopMonitor records the router's kernel nexthop objects' changes
// for the rest of the test: FRR installs routes through nexthop groups
// (nhid), so a next hop replaced under an unchanged route shows there and
// not in the route monitor.
func startNexthopMonitor(t testing.TB, l *lab.Lab) *labkit.Process {
	t.Helper()
	p, err := l.Start(lab.Router, fmt.Sprintf("nexthop-monitor-%d", time.Now().UnixNano()), []string{"ip", "-ts", "-o", "monitor", "nexthop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// packetWatch records, on some hosts, the packets that explain a request
// failing with "no route to host" (ICMP errors with the packet they quote,
// ARP and NDP) and the neighbour tables' changes, for a failed test to
// show.
type packetWatch struct{ procs []*labkit.Process }

// startPacketWatch starts a capture of ICMP, ICMPv6 and ARP on every
// interface of each host, and an "ip monitor neigh" there, for the rest
// of the test.
func startPacketWatch(t testing.TB, l *lab.Lab, hosts ...string) *packetWatch {
	t.Helper()
	w := &packetWatch{}
	for _, h := range hosts {
		w.add(t, l, h, "tcpdump", "-l", "-n", "-e", "-v", "-tt", "-i", "any", "icmp or icmp6 or arp")
		w.add(t, l, h, "ip", "-ts", "monitor", "neigh")
	}
	return w
}

// add runs argv on host for the rest of the test, its output logged by
// log.
func (w *packetWatch) add(t testing.TB, l *lab.Lab, host string, argv ...string) {
	t.Helper()
	p, err := l.Start(host, fmt.Sprintf("watch-%s-%s-%d", argv[0], host, time.Now().UnixNano()), argv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	w.procs = append(w.procs, p)
}

// log stops the captures and logs what they saw.
func (w *packetWatch) log(t testing.TB) {
	t.Helper()
	for _, p := range w.procs {
		_ = p.Stop()
		b, err := os.ReadFile(p.LogPath)
		t.Logf("%s (%v):\n%s", p.Name, err, b)
	}
}

// logSince logs the lines of a klog-format log (kube-proxy's) stamped at
// or after since (same day, UTC).
func logSince(t testing.TB, path string, since time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f[0]) < 5 {
			continue
		}
		at, err := time.Parse("15:04:05.000000", f[1])
		if err != nil {
			continue
		}
		s := since.UTC()
		at = time.Date(s.Year(), s.Month(), s.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), time.UTC)
		if !at.Before(s) {
			out = append(out, line)
		}
	}
	t.Logf("%s since %s:\n%s", filepath.Base(path), since.UTC().Format("15:04:05.000"), strings.Join(out, "\n"))
}

// forgetFlows deletes the nodes' conntrack entries towards vip, so that
// the client's requests from here on start from no state of earlier
// tests. The client's source ports towards one address advance by a few
// per connection and wrap within minutes in a full run; an entry left
// by a SYN that reached a node before its kube-proxy had the address
// (SYN_SENT, no NAT, 120 s) captures a later SYN from the same port: it
// is not DNATed (NAT is decided on a flow's first packet), loops between
// the router and the node to its TTL, and the request fails with "no
// route to host". Entries created after this call still count.
func forgetFlows(t testing.TB, l *lab.Lab, vip netip.Addr, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		out, err := l.Exec(context.Background(), n, "conntrack", "-D", "-d", vip.String())
		if err != nil && !strings.Contains(err.Error(), "0 flow entries") {
			t.Fatalf("deleting %s's conntrack entries towards %s: %v (%s)", n, vip, err, out)
		}
	}
}
