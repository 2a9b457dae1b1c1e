package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/probe"
	"github.com/herald-lb/herald/test/labkit"
)

// drainL2Config is an L2 pool beside the BGP pools, inside the lab's L2
// range, for the drain test and benchmark: one node answers for its
// address, the node that is drained.
const drainL2Config = `
apiVersion: herald.dev/v1beta1
kind: IPAddressPool
metadata: {name: l2-drain}
spec:
  addresses: [198.51.100.92/30]
  autoAssign: false
---
apiVersion: herald.dev/v1beta1
kind: L2Advertisement
metadata: {name: l2-drain}
spec:
  ipAddressPools: [l2-drain]
`

// drainScene is a BGP address advertised by every node and an L2
// address, both served by pods on every node, and the node to drain:
// the one answering for the L2 address.
type drainScene struct {
	// name-bgp and name-l2 are the Services, app=name their pods.
	name    string
	bgp, l2 netip.Addr
	victim  string
	others  []string
	// peer is the victim's session address on the router.
	peer netip.Addr
}

// newDrainScene applies drainL2Config and creates the Services
// name-bgp and name-l2 (lingeringBackends on every node), waits until the router
// leads the BGP address to every node and both answer HTTP, and builds
// kubectl-herald.
func newDrainScene(t testing.TB, l *lab.Lab, h *deploy.Herald, name string) drainScene {
	t.Helper()
	ctx := context.Background()
	apply(t, h, drainL2Config, "ipaddresspool/l2-drain", "l2advertisement/l2-drain")
	all := allNodes(l)
	app := func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": name} }
	_, l2 := suite.Service(t, name+"-l2", "l2-drain", app)
	_, bgp := suite.Service(t, name+"-bgp", poolMain, app)
	sc := drainScene{name: name, bgp: bgp[0], l2: l2[0]}
	lingeringBackends(t, l, name, all)
	sc.waitEndpoints(t, l)
	sc = sc.retarget(t, l)
	waitFIB(t, l, host(sc.bgp), all...)
	for _, c := range []struct {
		from string
		ip   netip.Addr
	}{{lab.External, sc.bgp}, {lab.Client, sc.l2}} {
		labkit.EventuallyWhy(t, 30*time.Second, fmt.Sprintf("an HTTP answer from %s through %s", c.from, c.ip), func() (bool, string) {
			_, err := l.HTTPGet(ctx, c.from, c.ip, 80)
			return err == nil, fmt.Sprint(err)
		})
	}
	if _, err := l.KubectlHeraldBinary(ctx); err != nil {
		t.Fatal(err)
	}
	return sc
}

// lingeringBackends runs a backend pod labelled app=app on each of nodes
// (a Deployment each, pinned to its node) that keeps serving for 3 s
// after SIGTERM. kubectl drain evicts them while the clients run, and
// kube-proxy on the other nodes keeps sending new connections to a
// terminating pod until its endpoint update arrives: on a loaded machine
// that took longer than the lab backends' 1 s (one refused connection in
// a run), a backend's part of a drain, not Herald's. A backend in a real
// cluster lingers the same way (a preStop sleep).
func lingeringBackends(t testing.TB, l *lab.Lab, app string, nodes []string) {
	t.Helper()
	deployments := l.Client().AppsV1().Deployments(testNS)
	grace := int64(10)
	for _, node := range nodes {
		d := lab.MovableBackend(testNS, app)
		d.Name = app + "-" + node
		sel := map[string]string{"app": app, "pinned-node": node}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		d.Spec.Template.Labels = sel
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		d.Spec.Template.Spec.TerminationGracePeriodSeconds = &grace
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = append(c.Args, "-linger=3s")
		if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = deployments.Delete(context.Background(), d.Name, metav1.DeleteOptions{}) })
	}
}

// waitEndpoints waits until both Services have a ready endpoint on every
// node.
func (sc drainScene) waitEndpoints(t testing.TB, l *lab.Lab) {
	t.Helper()
	for _, svc := range []string{sc.name + "-bgp", sc.name + "-l2"} {
		if err := l.WaitEndpoints(context.Background(), testNS, svc, allNodes(l), 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// clients are the two HTTP clients of a drain: the external client
// through the router to the BGP address, the client on the segment to
// the L2 address, each a new connection every 20 ms (50 a second).
type clients struct{ bgp, l2 *lab.HTTPMonitor }

func (sc drainScene) startClients(t testing.TB, l *lab.Lab) clients {
	t.Helper()
	return clients{
		bgp: l.StartHTTPMonitor(t, lab.External, sc.bgp, 80, 20*time.Millisecond, time.Second),
		l2:  l.StartHTTPMonitor(t, lab.Client, sc.l2, 80, 20*time.Millisecond, time.Second),
	}
}

// herdDrain is one run of `kubectl herald drain`, with what the router
// and the L2 address's answerers were the moment it returned.
type herdDrain struct {
	run     lab.PluginRun
	err     error
	paths   []netip.Addr // the router's paths for the BGP address
	answers []string     // the nodes answering ARP for the L2 address
	readErr error
}

// heraldDrain runs `kubectl herald drain` on the victim and reads the
// router and an ARP probe as soon as it returns.
func (sc drainScene) heraldDrain(l *lab.Lab) herdDrain {
	ctx := context.Background()
	var d herdDrain
	d.run, d.err = l.KubectlHerald(ctx, "drain", "--timeout", "2m", sc.victim)
	r, err := l.RouterRoutes(ctx, host(sc.bgp))
	d.paths = pathPeers(r)
	answers, aerr := l.ARPProbe(ctx, sc.l2)
	for _, a := range answers {
		d.answers = append(d.answers, a.Node)
	}
	if err == nil {
		err = aerr
	}
	d.readErr = err
	return d
}

// moveWatch records, from its start on, when the router's FIB stopped
// leading the BGP address to the victim, and when another node alone
// answered ARP for the L2 address.
type moveWatch struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	bgpGone time.Time
	l2Moved time.Time
	l2To    string
}

func (sc drainScene) watchMoves(l *lab.Lab) *moveWatch {
	ctx, cancel := context.WithCancel(context.Background())
	m := &moveWatch{cancel: cancel}
	m.wg.Go(func() {
		for ctx.Err() == nil {
			hops, err := l.RouterFIB(ctx, host(sc.bgp))
			if err == nil && !slices.ContainsFunc(hops, func(h lab.NextHop) bool { return h.Node == sc.victim }) {
				m.mu.Lock()
				m.bgpGone = time.Now()
				m.mu.Unlock()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	m.wg.Go(func() {
		for ctx.Err() == nil {
			sent := time.Now()
			answers, err := l.ARPProbe(ctx, sc.l2)
			if err == nil && len(answers) == 1 && answers[0].Node != sc.victim {
				m.mu.Lock()
				m.l2Moved, m.l2To = sent, answers[0].Node
				m.mu.Unlock()
				return
			}
		}
	})
	return m
}

// wait waits up to timeout for both moves and returns their times (zero
// for one that did not happen).
func (m *moveWatch) wait(timeout time.Duration) (bgpGone, l2Moved time.Time, l2To string) {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		m.cancel()
		<-done
	}
	m.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bgpGone, m.l2Moved, m.l2To
}

// served sums up an HTTP client's tries sent from start on.
type served struct {
	sent, failed int
	// gap is the longest time between the sending of two answered
	// requests in a row (20 ms when nothing is lost or slow).
	gap    time.Duration
	errors []string // the first five failures
}

func summarize(tries []probe.HTTPTry, start time.Time) served {
	var s served
	var last time.Time
	for _, try := range tries {
		if try.Sent.Before(start) {
			if try.OK {
				last = try.Sent
			}
			continue
		}
		s.sent++
		if !try.OK {
			s.failed++
			if len(s.errors) < 5 {
				s.errors = append(s.errors, fmt.Sprintf("+%v: %s", try.Sent.Sub(start).Round(time.Millisecond), try.Error))
			}
			continue
		}
		if !last.IsZero() {
			s.gap = max(s.gap, try.Sent.Sub(last))
		}
		last = try.Sent
	}
	return s
}

// resetsBetween counts the tries sent in [from, to) that failed with a
// connection reset.
func resetsBetween(tries []probe.HTTPTry, from, to time.Time) int {
	n := 0
	for _, try := range tries {
		if !try.OK && !try.Sent.Before(from) && try.Sent.Before(to) && strings.Contains(try.Error, "connection reset by peer") {
			n++
		}
	}
	return n
}

func (s served) String() string {
	return fmt.Sprintf("%d requests, %d failed, longest gap between answers %v", s.sent, s.failed, s.gap.Round(time.Millisecond))
}

// checkDrainOutput checks what `kubectl herald drain` printed: the label,
// the BGP address leaving the victim while the other nodes announce it,
// the L2 address leaving it for the node that answers it, and last that
// the node announces nothing.
func checkDrainOutput(t testing.TB, sc drainScene, out, l2Owner string) {
	t.Helper()
	want := []string{
		fmt.Sprintf("node %s: labelled herald.dev/drain=true; waiting until it announces nothing", sc.victim),
		fmt.Sprintf("%s (bgp) left %s: now announced by %s\n", host(sc.bgp), sc.victim, strings.Join(sc.others, ", ")),
		fmt.Sprintf("%s (l2) left %s: now announced by %s\n", sc.l2, sc.victim, l2Owner),
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl herald drain printed no %q", w)
		}
	}
	last := fmt.Sprintf("node %s announces nothing: run kubectl drain %s now\n", sc.victim, sc.victim)
	if !strings.HasSuffix(out, last) {
		t.Errorf("kubectl herald drain did not end with %q", last)
	}
}

// retarget makes the node answering for the L2 address now the one to
// drain.
func (sc drainScene) retarget(t testing.TB, l *lab.Lab) drainScene {
	t.Helper()
	sc.victim = harness.Owner(t, l, sc.l2)
	sc.others = slices.DeleteFunc(allNodes(l), func(n string) bool { return n == sc.victim })
	sc.peer = nodeAddrs(l, false, sc.victim)[0]
	return sc
}
