package announce

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// TestL2MemoEqualsL2: over random sequences of changes to Services (with
// and without a Rev, often with several addresses of a family, spread
// by Spread), node labels and eligibility, liveness and the
// configuration, the memo's result equals L2's at every step, whether it
// is told everything changed or only what did, and a step that changed
// one Service decides only that Service's addresses.
func TestL2MemoEqualsL2(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	configs := []*config.Config{
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27", "2001:db8:1::64-2001:db8:1::7f"), pool("other", "198.51.100.128/27")},
			L2Advertisements: []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) { s.IPAddressPools = []string{"l2"} })}}),
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27", "2001:db8:1::64-2001:db8:1::7f"), pool("other", "198.51.100.128/27")},
			L2Advertisements: []*v1beta1.L2Advertisement{
				l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) {
					s.IPAddressPools = []string{"l2"}
					s.Interfaces = []string{"eth1"}
				}),
				l2ad("zone-a", func(s *v1beta1.L2AdvertisementSpec) { s.NodeSelectors = []metav1.LabelSelector{sel("zone", "a")} }),
			}}),
	}
	var revs uint64
	var m, dm L2Memo
	ns := nodes("node1", "node2", "node3", "node4")
	dead := map[string]bool{}
	st := State{Config: configs[0], Live: func(n string) bool { return !dead[n] }}
	randomService := func(key string) Service {
		var ips []string
		for range 1 + rng.IntN(5) { // often several of a family: spread
			switch rng.IntN(3) {
			case 0:
				ips = append(ips, fmt.Sprintf("198.51.100.%d", 64+rng.IntN(8)))
			case 1:
				ips = append(ips, fmt.Sprintf("2001:db8:1::%x", 0x64+rng.IntN(8)))
			default:
				ips = append(ips, fmt.Sprintf("198.51.100.%d", 128+rng.IntN(4)))
			}
		}
		s := svc(key, ips...)
		if rng.IntN(3) == 0 {
			s = local(s, fmt.Sprintf("node%d", 1+rng.IntN(4)))
		}
		if rng.IntN(5) != 0 { // Rev 0 sometimes: never trusted
			revs++
			s.Rev = revs
		}
		return s
	}
	for i := range 12 {
		st.Services = append(st.Services, randomService(fmt.Sprintf("ns/s%02d", i)))
	}
	var lastChanged int
	var previous []netip.Addr
	for step := range 3000 {
		oneService := false
		switch rng.IntN(10) {
		case 0:
			n := ns[rng.IntN(len(ns))]
			n.Labels = map[string]string{"kubernetes.io/hostname": n.Name, "zone": []string{"a", "b"}[rng.IntN(2)]}
		case 1:
			n := ns[rng.IntN(len(ns))]
			if _, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
				delete(n.Labels, corev1.LabelNodeExcludeBalancers)
			} else {
				n.Labels[corev1.LabelNodeExcludeBalancers] = ""
			}
		case 2:
			n := fmt.Sprintf("node%d", 1+rng.IntN(4))
			dead[n] = !dead[n]
		case 3:
			// Built again, as every reconcile does: a new pointer.
			c := *configs[rng.IntN(len(configs))]
			st.Config = &c
		default:
			lastChanged = rng.IntN(len(st.Services))
			previous = st.Services[lastChanged].IPs
			st.Services[lastChanged] = randomService(st.Services[lastChanged].Key)
			oneService = true
		}
		st.Nodes = ns
		worldChanged := !oneService
		var changed Service
		if oneService {
			changed = st.Services[lastChanged]
		}
		got, want := m.Decide(st), L2(st)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: memo differs from L2:\n got %+v\nwant %+v", step, got, want)
		}
		// A second memo is told what changed when only a Service did,
		// everything otherwise: its result is L2's too.
		ch := Changes{All: true}
		if oneService {
			ch = Changes{IPs: append(slices.Clone(previous), changed.IPs...), Keys: []string{changed.Key}}
		}
		dm.Update(st, ch, holdersIn(st))
		checkOwners(t, step, &dm, want)
		if got := dm.Result(); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: memo told what changed differs from L2:\n got %+v\nwant %+v", step, got, want)
		}
		if worldChanged {
			continue
		}
		// Decided anew: the changed Service's old and new addresses, and
		// those of Services without a Rev; nothing else.
		may := map[netip.Addr]bool{}
		for _, ip := range append(previous, changed.IPs...) {
			may[ip] = true
		}
		for _, s := range st.Services {
			if s.Rev == 0 {
				for _, ip := range s.IPs {
					may[ip] = true
				}
			}
		}
		if m.Decided() > len(may) {
			t.Fatalf("step %d: one Service changed, %d addresses decided anew (at most %d may be)", step, m.Decided(), len(may))
		}
	}
	// Nothing changed: nothing is decided, when every Service has a Rev.
	for i := range st.Services {
		if st.Services[i].Rev == 0 {
			revs++
			st.Services[i].Rev = revs
		}
	}
	m.Decide(st)
	if m.Decide(st); m.Decided() != 0 {
		t.Errorf("nothing changed, %d addresses decided anew", m.Decided())
	}
}

// TestL2MemoSameConfigBuiltTwice: two builds of the same input compare
// equal, so that a reconcile (which builds the configuration anew) keeps
// the memo.
func TestL2MemoSameConfigBuiltTwice(t *testing.T) {
	in := config.Input{Pools: []*v1beta1.IPAddressPool{pool("l2", "198.51.100.64/27")},
		L2Advertisements: []*v1beta1.L2Advertisement{l2ad("l2", func(s *v1beta1.L2AdvertisementSpec) {
			s.NodeSelectors = []metav1.LabelSelector{sel("zone", "a")}
		})}}
	s := svc("ns/a", "198.51.100.64")
	s.Rev = 1
	var m L2Memo
	st := State{Config: cfg(t, in), Nodes: nodes("node1", "node2"), Services: []Service{s}}
	m.Decide(st)
	st.Config = cfg(t, in)
	if !m.sameWorld(st, st.nodes(), []bool{true, true}) {
		t.Fatal("the same configuration built twice counts as a change: every reconcile would decide every address")
	}
}

// holdersIn returns the Services of st holding an address, as L2
// groups them.
func holdersIn(st State) func(netip.Addr) []*Service {
	by := map[netip.Addr][]*Service{}
	for _, h := range st.holders() {
		by[h.ip] = h.svcs
	}
	return func(ip netip.Addr) []*Service { return by[ip] }
}

// checkOwners fails unless m's decisions (Owner) are want's owners.
func checkOwners(t *testing.T, step int, m *L2Memo, want L2Result) {
	t.Helper()
	owners := 0
	for _, e := range m.entries {
		if o, ok := m.Owner(e.d.owner.IP); ok {
			owners++
			i, found := slices.BinarySearchFunc(want.Owners, o.IP, func(w L2Owner, ip netip.Addr) int { return w.IP.Compare(ip) })
			if !found || !reflect.DeepEqual(want.Owners[i], o) {
				t.Fatalf("step %d: memo told what changed owns %+v; L2 says %+v", step, o, want.Owners)
			}
		}
	}
	if owners != len(want.Owners) {
		t.Fatalf("step %d: memo told what changed has %d owners, L2 %d: %+v", step, owners, len(want.Owners), want.Owners)
	}
}
