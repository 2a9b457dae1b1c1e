package allocator

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

// Small builders, so that each test case reads in a line or two.

type poolOpt func(*Pool)

func pool(name string, opts ...any) Pool {
	p := Pool{Name: name, AutoAssign: true}
	for _, o := range opts {
		switch o := o.(type) {
		case string:
			r, err := iprange.Parse(o)
			if err != nil {
				panic(err)
			}
			p.Ranges = append(p.Ranges, r)
		case poolOpt:
			o(&p)
		default:
			panic("pool: unknown option")
		}
	}
	return p
}

func priority(n int32) poolOpt { return func(p *Pool) { p.Priority = &n } }
func manual() poolOpt          { return func(p *Pool) { p.AutoAssign = false } }
func avoidBuggy() poolOpt      { return func(p *Pool) { p.AvoidBuggyIPs = true } }
func closed() poolOpt          { return func(p *Pool) { p.Closed = true } }
func inNamespaces(ns ...string) poolOpt {
	return func(p *Pool) { p.Namespaces = ns }
}
func nsSelector(sel string) poolOpt {
	return func(p *Pool) {
		p.NamespaceSelectors = append(p.NamespaceSelectors, labels.SelectorFromSet(parseSet(sel)))
	}
}
func svcSelector(sel string) poolOpt {
	return func(p *Pool) { p.ServiceSelectors = append(p.ServiceSelectors, labels.SelectorFromSet(parseSet(sel))) }
}

// parseSet reads "a=b,c=d".
func parseSet(s string) labels.Set {
	set := labels.Set{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set[k] = v
		}
	}
	return set
}

type reqOpt func(*service.Request)

// svc is a SingleStack IPv4 Service using TCP/80, in the namespace of key.
func svc(key string, opts ...reqOpt) service.Request {
	ns, _, _ := strings.Cut(key, "/")
	r := service.Request{
		Key: key, Namespace: ns,
		Families:     []corev1.IPFamily{corev1.IPv4Protocol},
		FamilyPolicy: corev1.IPFamilyPolicySingleStack,
		Ports:        []service.Port{{Protocol: corev1.ProtocolTCP, Port: 80}},
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

const (
	v4 = corev1.IPv4Protocol
	v6 = corev1.IPv6Protocol
)

func families(policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) reqOpt {
	return func(r *service.Request) { r.FamilyPolicy, r.Families = policy, fams }
}
func single6() reqOpt { return families(corev1.IPFamilyPolicySingleStack, v6) }
func requireDual(fams ...corev1.IPFamily) reqOpt {
	return families(corev1.IPFamilyPolicyRequireDualStack, fams...)
}
func preferDual(fams ...corev1.IPFamily) reqOpt {
	return families(corev1.IPFamilyPolicyPreferDualStack, fams...)
}
func ips(addrs ...string) reqOpt {
	return func(r *service.Request) {
		r.RequestedIPs = nil
		for _, a := range addrs {
			r.RequestedIPs = append(r.RequestedIPs, netip.MustParseAddr(a))
		}
	}
}
func fromPool(name string) reqOpt { return func(r *service.Request) { r.Pool = name } }
func sharing(key string) reqOpt   { return func(r *service.Request) { r.SharingKey = key } }
func nsLabels(set string) reqOpt {
	return func(r *service.Request) { r.NamespaceLabels = parseSet(set) }
}
func svcLabels(set string) reqOpt { return func(r *service.Request) { r.Labels = parseSet(set) } }
func etpLocal(sel string) reqOpt {
	return func(r *service.Request) { r.ETPLocal, r.Selector = true, parseSet(sel) }
}
func selector(sel string) reqOpt { return func(r *service.Request) { r.Selector = parseSet(sel) } }

// ports reads "TCP/80", "UDP/53", ...
func ports(specs ...string) reqOpt {
	return func(r *service.Request) {
		r.Ports = nil
		for _, s := range specs {
			proto, num, _ := strings.Cut(s, "/")
			n, err := strconv.Atoi(num)
			if err != nil {
				panic(err)
			}
			r.Ports = append(r.Ports, service.Port{Protocol: corev1.Protocol(proto), Port: int32(n)})
		}
	}
}

func newAlloc(t testing.TB, pools ...Pool) *Allocator {
	t.Helper()
	a := New()
	if err := a.SetPools(pools); err != nil {
		t.Fatalf("SetPools: %v", err)
	}
	return a
}

func mustAssign(t testing.TB, a *Allocator, req service.Request) Assignment {
	t.Helper()
	asg, err := a.Assign(req)
	if err != nil {
		t.Fatalf("Assign(%s): %v", req.Key, err)
	}
	checkBook(t, a)
	return asg
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// wantAssignment checks the pool and addresses of asg.
func wantAssignment(t testing.TB, asg Assignment, pool string, want ...string) {
	t.Helper()
	if asg.Pool != pool || !slices.Equal(asg.IPs, addrs(want...)) {
		t.Errorf("%s got %s %v, want %s %v", asg.Key, asg.Pool, asg.IPs, pool, want)
	}
}

// wantFail checks that err is an *Error with reason and that its message
// holds every fragment.
func wantFail(t testing.TB, err error, reason Reason, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", reason)
	}
	if got := ReasonOf(err); got != reason {
		t.Errorf("reason %q (%v), want %q", got, err, reason)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q does not mention %q", err, f)
		}
	}
}

func assignFails(t testing.TB, a *Allocator, req service.Request, reason Reason, fragments ...string) {
	t.Helper()
	before, had := a.Lookup(req.Key)
	_, err := a.Assign(req)
	wantFail(t, err, reason, fragments...)
	after, has := a.Lookup(req.Key)
	if had != has || !slices.Equal(before.IPs, after.IPs) || before.Pool != after.Pool {
		t.Errorf("a failed Assign changed %s from %v to %v", req.Key, before, after)
	}
	checkBook(t, a)
}
