package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

type layoutFigures struct {
	layout, variant string
	// why is set instead of figures when the variant does not run.
	why              string
	up               time.Duration
	toFIB, loss, bfd []time.Duration
}

// BenchmarkBGPLayouts: the BGP failover figures of every layout of
// docs/bgp-layouts.md the lab can run, each with hold time 3 s and with
// BFD 100 ms x 3 where the layout allows BFD: the time from the BGPPeer
// applied (no session before) until the router has every node's session
// up; for 5 Services, from the create call until the /32 is in FRR's FIB
// via all 3 nodes (endpoints set by hand); and a node paused (every
// process of the node stopped, its links up: only BFD or the hold timer
// can tell; rotating over the nodes) until its next hop is gone from
// FRR's FIB, and with BFD until FRR's BFD session with it is down. A
// summary table of every layout, on stdout, closes the output, naming
// those that cannot run here and why.
func BenchmarkBGPLayouts(b *testing.B) {
	l, h := suite.Herald(b)
	var rows []layoutFigures
	for _, lay := range bgpLayouts() {
		b.Run(lay.name, func(b *testing.B) {
			figures, skip := benchLayout(b, l, h, lay)
			rows = append(rows, figures...)
			if skip != "" {
				b.Skip(skip)
			}
		})
	}
	// on stdout: go test prints a benchmark's log only with -v when it
	// has sub-benchmarks, and make bench runs without
	fmt.Printf("BGP failover figures per layout (create->FIB: p50 of 5; node loss: a node paused, its links up):\n%s", layoutTable(rows))
}

// benchLayout measures both variants of lay and returns their figures
// (or why each does not run), and why the layout cannot run at all.
func benchLayout(b *testing.B, l *lab.Lab, h *deploy.Herald, lay layout) ([]layoutFigures, string) {
	var rows []layoutFigures
	if lay.prepare != nil {
		if why := lay.prepare(b, l, h); why != "" {
			return []layoutFigures{{layout: lay.name, variant: "-", why: why}}, why
		}
	}
	for _, bfd := range []bool{false, true} {
		variant := "HoldTime-3s"
		if bfd {
			variant = "BFD-100msx3"
		}
		if bfd && lay.noBFD != "" {
			rows = append(rows, layoutFigures{layout: lay.name, variant: variant, why: lay.noBFD})
			continue
		}
		ok := b.Run(variant, func(b *testing.B) {
			for range b.N {
				f := measureLayout(b, l, h, lay, bfd)
				f.layout, f.variant = lay.name, variant
				rows = append(rows, f)
			}
		})
		if !ok {
			rows = append(rows, layoutFigures{layout: lay.name, variant: variant, why: "failed: see its log above"})
		}
	}
	return rows, ""
}

// measureLayout takes one variant of lay through session start, 5 new
// Services and node losses (3 with hold time, 6 with BFD).
func measureLayout(b *testing.B, l *lab.Lab, h *deploy.Herald, lay layout, bfd bool) layoutFigures {
	losses := 3
	if bfd {
		losses = 6
	}
	var f layoutFigures
	f.up = startSessions(b, l, h, lay, bfd)
	var prefix netip.Prefix
	prefix, f.toFIB = newServices(b, l, lay.name, 5)
	waitLayoutHealthy(b, l, prefix, bfd)
	f.loss, f.bfd = nodeLosses(b, l, lay.name, prefix, bfd, losses)
	return f
}

// startSessions deletes the BGPPeer, sets the router up for lay, and
// returns how long every node's session took to come up once the
// layout's BGPPeer was applied.
func startSessions(b *testing.B, l *lab.Lab, h *deploy.Herald, lay layout, bfd bool) time.Duration {
	b.Helper()
	if _, err := h.Kubectl(context.Background(), "delete", "--ignore-not-found", "bgppeer", peerV4); err != nil {
		b.Fatal(err)
	}
	labkit.Eventually(b, 60*time.Second, "no session of the deleted BGPPeer", func() bool { return numberedSessions(b, l) == 0 })
	reconfigureRouter(b, l, lab.FRR, lay.router(l, bfd))
	if lay.ready != nil {
		lay.ready(b, l)
	}
	all := allNodes(l)
	start := time.Now()
	apply(b, h, lay.peer(bfd))
	labkit.EventuallyWhy(b, 120*time.Second, lay.name+": every node's session up", func() (bool, string) {
		n := lay.sessions(b, l)
		return n == len(all), fmt.Sprintf("%d of %d up", n, len(all))
	})
	up := time.Since(start)
	b.Logf("%s: BGPPeer applied -> every node's session up after %v", lay.name, up.Round(time.Millisecond))
	b.ReportMetric(up.Seconds(), "s-sessions-up")
	return up
}

// newServices creates n IPv4 Services of the main pool one after the
// other, endpoints on every node set by hand, and returns the first's
// /32 and how long each took from its create call into FRR's FIB via
// every node.
func newServices(b *testing.B, l *lab.Lab, layout string, n int) (netip.Prefix, []time.Duration) {
	b.Helper()
	ctx := context.Background()
	all := allNodes(l)
	var first netip.Prefix
	var toFIB []time.Duration
	for i := range n {
		name := fmt.Sprintf("layout-%s-%d", strings.ToLower(layout), i)
		b.Cleanup(func() { _ = l.DeleteService(context.Background(), testNS, name) })
		start := time.Now()
		svc := lab.LoadBalancerService(testNS, name, corev1.IPv4Protocol)
		svc.Annotations = map[string]string{"herald.dev/address-pool": poolMain}
		created, err := l.CreateService(ctx, svc)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.SetEndpoints(ctx, created, all...); err != nil {
			b.Fatal(err)
		}
		p := host(addressOf(b, l, name))
		for !slices.Equal(fibVia(b, l, p), all) {
			if time.Since(start) > 30*time.Second {
				b.Fatalf("%s not via every node after 30 s", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
		toFIB = append(toFIB, time.Since(start))
		if i == 0 {
			first = p
		}
	}
	report(b, layout+": create -> /32 in FRR's FIB via 3 nodes", "create", toFIB)
	return first, toFIB
}

// nodeLosses pauses the nodes in turn, n times, and returns how long
// each kept its next hop of prefix in FRR's FIB and, with BFD, how long
// FRR's BFD session with it stayed up; each round waits for a full
// recovery.
func nodeLosses(b *testing.B, l *lab.Lab, layout string, prefix netip.Prefix, bfd bool, n int) (loss, bfdDown []time.Duration) {
	b.Helper()
	all := allNodes(l)
	for r := range n {
		node := all[r%len(all)]
		var down func() time.Time
		if bfd {
			down = watchRouterBFDDown(b, l, node)
		}
		paused, d, resume := pauseLoss(b, l, prefix, node)
		loss = append(loss, d)
		if bfd {
			bfdDown = append(bfdDown, down().Sub(paused))
		}
		resume()
		waitLayoutHealthy(b, l, prefix, bfd)
	}
	if bfd {
		report(b, layout+", BFD 100 ms x 3: node paused -> FRR's BFD session down (to within one vtysh call)", "bfd", bfdDown)
	}
	report(b, layout+": node paused -> next hop gone from FRR's FIB", "detect", loss)
	return loss, bfdDown
}

// waitLayoutHealthy waits until every node is a next hop of prefix and,
// with BFD, every node's BFD session is up on both sides at 100 ms x 3,
// for a second.
func waitLayoutHealthy(t testing.TB, l *lab.Lab, prefix netip.Prefix, bfd bool) {
	t.Helper()
	all := allNodes(l)
	healthy := func() bool {
		if !slices.Equal(fibVia(t, l, prefix), all) {
			return false
		}
		if !bfd {
			return true
		}
		peers, err := routerBFDPeers(l)
		if err != nil {
			return false
		}
		for _, n := range all {
			p, ok := peers[n]
			if !ok || p.Status != "up" || p.Detect == 0 || p.Detect > 300*time.Millisecond {
				return false
			}
		}
		return speakersBFDUp(l, all)
	}
	var since time.Time
	labkit.Eventually(t, 90*time.Second, fmt.Sprintf("every node a next hop of %s (BFD %v up) for a second", prefix, bfd), func() bool {
		if !healthy() {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= time.Second
	})
}

// routerBFDPeers reads FRR's BFD sessions by node: a numbered peer by
// its address, an unnumbered one by the router's interface toward it.
func routerBFDPeers(l *lab.Lab) (map[string]routerconf.BFDPeer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := l.RouterCLI(ctx, "show bfd peers json")
	if err != nil {
		return nil, err
	}
	peers, err := routerconf.ParseFRRBFDPeers([]byte(out))
	if err != nil {
		return nil, err
	}
	byNode := map[string]routerconf.BFDPeer{}
	for a, p := range peers {
		if n, ok := nodeOfPeer(l, a); ok {
			byNode[n.Name] = p
			continue
		}
		for _, n := range allNodes(l) {
			if p.Interface != "" && p.Interface == lab.UnnumberedRouterIf(n) {
				byNode[n] = p
			}
		}
	}
	return byNode, nil
}

// watchRouterBFDDown polls FRR's BFD session with node from now on and
// returns a function that waits for the poll that saw it down and
// returns when that poll began (within one vtysh call of the change).
func watchRouterBFDDown(t testing.TB, l *lab.Lab, node string) func() time.Time {
	t.Helper()
	start := time.Now()
	found := make(chan time.Time, 1)
	go func() {
		for time.Since(start) < 30*time.Second {
			polled := time.Now()
			peers, err := routerBFDPeers(l)
			if p, ok := peers[node]; err == nil && ok && p.Status == "down" {
				found <- polled
				return
			}
		}
		found <- time.Time{}
	}()
	return func() time.Time {
		at := <-found
		if at.IsZero() {
			t.Fatalf("FRR's BFD session with %s not down 30 s after it was paused", node)
		}
		return at
	}
}

// pauseLoss pauses node and returns when its processes were stopped,
// how long the router's FIB kept its next hop of prefix after that
// (polled every 10 ms, at the lab's CPU weight; the other nodes must
// stay), and a function that resumes the node.
func pauseLoss(t testing.TB, l *lab.Lab, prefix netip.Prefix, node string) (time.Time, time.Duration, func()) {
	t.Helper()
	others := slices.DeleteFunc(allNodes(l), func(n string) bool { return n == node })
	weight := l.AtLabWeight()
	defer weight()
	resume, _, err := l.PauseNode(node)
	// PauseNode lists the node's processes first (a walk of /proc), then
	// stops them: the node is gone from when it returns, within the
	// microseconds its signals take
	paused := time.Now()
	if resume != nil {
		t.Cleanup(func() { _ = resume() })
	}
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		via := fibVia(t, l, prefix)
		if !slices.Contains(via, node) {
			d := time.Since(paused)
			if !slices.Equal(via, others) {
				t.Fatalf("after %s was paused, %s via %v, want %v", node, prefix, via, others)
			}
			return paused, d, func() {
				if err := resume(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if time.Since(paused) > 30*time.Second {
			t.Fatalf("%s still a next hop of %s 30 s after it was paused", node, prefix)
		}
	}
	return paused, 0, nil
}

// layoutTable renders the summary: one row per layout and variant.
func layoutTable(rows []layoutFigures) string {
	var b strings.Builder
	ms := func(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }
	spread := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		return fmt.Sprintf("%d / %d ms (n=%d)", ms(median(ds)), ms(slices.Max(ds)), len(ds))
	}
	fmt.Fprintf(&b, "%-11s %-12s %11s %12s %26s %24s\n", "layout", "variant", "sessions up", "create->FIB", "node loss->FIB p50 / max", "BFD down p50 / max")
	for _, r := range rows {
		if r.why != "" {
			fmt.Fprintf(&b, "%-11s %-12s %s\n", r.layout, r.variant, r.why)
			continue
		}
		fmt.Fprintf(&b, "%-11s %-12s %9.1f s %9d ms %26s %24s\n", r.layout, r.variant, r.up.Seconds(),
			ms(median(r.toFIB)), spread(r.loss), spread(r.bfd))
	}
	return b.String()
}

// median is the p50 of ds as report computes it.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)+1)/2-1]
}
