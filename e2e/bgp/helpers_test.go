package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
	"github.com/herald-lb/herald/test/labkit"
)

// dualStack makes a Service require both families.
func dualStack(s *corev1.Service) {
	p := corev1.IPFamilyPolicyRequireDualStack
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	s.Spec.IPFamilyPolicy = &p
}

func host(a netip.Addr) netip.Prefix { return lab.HostPrefix(a) }

// nodeAddrs lists the nodes' IPv4 (or IPv6) segment addresses.
func nodeAddrs(l *lab.Lab, v6 bool, names ...string) []netip.Addr {
	var out []netip.Addr
	for _, n := range l.Nodes() {
		if len(names) > 0 && !slices.Contains(names, n.Name) {
			continue
		}
		if v6 {
			out = append(out, n.IPv6)
		} else {
			out = append(out, n.IPv4)
		}
	}
	return out
}

func allNodes(l *lab.Lab) []string {
	var out []string
	for _, n := range l.Nodes() {
		out = append(out, n.Name)
	}
	return out
}

// route reads the router's RIB and FIB for a prefix.
func route(t testing.TB, l *lab.Lab, prefix netip.Prefix) lab.Route {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := l.RouterRoutes(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitFIB waits until the router's kernel routes for prefix lead to
// exactly nodes (none: the prefix is gone from the RIB and the FIB), and
// returns the route.
func waitFIB(t testing.TB, l *lab.Lab, prefix netip.Prefix, nodes ...string) lab.Route {
	t.Helper()
	slices.Sort(nodes)
	var r lab.Route
	labkit.Eventually(t, 30*time.Second, fmt.Sprintf("router FIB for %s via %v", prefix, nodes), func() bool {
		r = route(t, l, prefix)
		if len(nodes) == 0 {
			return len(r.Paths) == 0 && len(r.FIB) == 0
		}
		// FIB and RIB both: the kernel can show the routes of the router
		// before a restart for a moment, so the RIB must agree
		return slices.Equal(sortedNodes(r), nodes) && len(pathPeers(r)) >= len(nodes)
	})
	return r
}

// sortedNodes are the nodes of a route's FIB next hops, sorted by name.
func sortedNodes(r lab.Route) []string {
	n := r.FIBNodes()
	slices.Sort(n)
	return n
}

// pathPeers lists the neighbors the router learned prefix from.
func pathPeers(r lab.Route) []netip.Addr {
	var out []netip.Addr
	for _, p := range r.Paths {
		out = append(out, p.Peer)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// fibStays polls the router's FIB for prefix until done holds, checking
// on every read that each of keep is still a next hop.
func fibStays(t testing.TB, l *lab.Lab, prefix netip.Prefix, keep []string, what string, done func(lab.Route) bool) lab.Route {
	t.Helper()
	var r lab.Route
	labkit.Eventually(t, 30*time.Second, what, func() bool {
		r = route(t, l, prefix)
		for _, k := range keep {
			if !slices.Contains(r.FIBNodes(), k) {
				t.Fatalf("%s: %s lost next hop %s (FIB via %v)", what, prefix, k, r.FIBNodes())
			}
		}
		return done(r)
	})
	return r
}

// neighbors returns the router's BGP sessions by address.
func neighbors(t testing.TB, l *lab.Lab) map[netip.Addr]routerconf.Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	peers, err := l.RouterNeighbors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[netip.Addr]routerconf.Peer{}
	for _, p := range peers {
		out[p.Address] = p
	}
	return out
}

// established lists the addresses of the router's established sessions.
func established(t testing.TB, l *lab.Lab) []netip.Addr {
	t.Helper()
	var up []netip.Addr
	for a, p := range neighbors(t, l) {
		if p.Up() {
			up = append(up, a)
		}
	}
	slices.SortFunc(up, func(a, b netip.Addr) int { return a.Compare(b) })
	return up
}

// waitSessions waits until the router's established sessions are exactly
// want.
func waitSessions(t testing.TB, l *lab.Lab, timeout time.Duration, want ...netip.Addr) {
	t.Helper()
	slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })
	labkit.EventuallyWhy(t, timeout, "the router's established sessions", func() (bool, string) {
		up := established(t, l)
		return slices.Equal(up, want), fmt.Sprintf("established %v, want %v", up, want)
	})
}

// apply applies YAML and, at the end of the test, deletes the objects it
// names (kind/name pairs in undo) and re-applies the base configuration.
func apply(t testing.TB, h *deploy.Herald, yaml string, undo ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		if len(undo) > 0 {
			if _, err := h.Kubectl(ctx, append([]string{"delete", "--ignore-not-found", "--wait=false"}, undo...)...); err != nil {
				t.Error(err)
			}
		}
		if err := h.Apply(ctx, baseConfig()); err != nil {
			t.Error(err)
		}
	})
	if err := h.Apply(context.Background(), yaml); err != nil {
		t.Fatal(err)
	}
}

// waitServiceCondition waits for a Service condition whose message holds
// every fragment, and returns it.
func waitServiceCondition(t testing.TB, l *lab.Lab, name, typ string, status metav1.ConditionStatus, fragments ...string) metav1.Condition {
	t.Helper()
	return l.WaitServiceCondition(t, testNS, name, typ, status, func(c metav1.Condition) bool { return lab.ContainsAll(c.Message, fragments) })
}

// waitEvent waits for an event with reason on the object kind/name whose
// message contains every fragment, and returns its message.
func waitEvent(t testing.TB, l *lab.Lab, kind, name, reason string, fragments ...string) string {
	t.Helper()
	return l.WaitEvent(t, time.Time{}, kind, name, reason, fragments...)
}

// heraldClient is a client of Herald's API group as the lab's admin.
func heraldClient(t testing.TB, l *lab.Lab) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(l.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
