package announce

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// TestBGPMemoEqualsBGP: over random changes to Services (replaced with
// and without a Rev, created, deleted, labelled), the node's labels and
// the configuration (aggregation, two peers, per-peer advertisements,
// local preference), the memo's result equals BGP's at every step, and
// when only Services changed it worked out only those.
func TestBGPMemoEqualsBGP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	peers := []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)}
	twoPeers := []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil), peer("ibgp", "198.51.100.2", 64513, nil)}
	configs := []*config.Config{
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("bgp", "198.51.100.128/27", "2001:db8:ff::/120")},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("all", nil)}, Peers: peers}),
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("bgp", "198.51.100.128/27", "2001:db8:ff::/120")},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{
				bgpad("all", func(s *v1beta1.BGPAdvertisementSpec) {
					s.Communities = []string{"64512:1"}
					s.LinkBandwidth = v1beta1.LinkBandwidthReadyLocalEndpoints
				}),
				bgpad("rack1", func(s *v1beta1.BGPAdvertisementSpec) {
					s.NodeSelectors = []metav1.LabelSelector{sel("rack", "1")}
					s.Communities = []string{"64512:2", "large:64512:1:2"}
				}),
			}, Peers: peers}),
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{pool("bgp", "198.51.100.128/27", "2001:db8:ff::/120")},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{
				bgpad("aggregate", func(s *v1beta1.BGPAdvertisementSpec) {
					s.AggregationLength, s.AggregationLengthV6 = ptr[int32](30), ptr[int32](124)
					s.Communities = []string{"64512:3"}
					s.Peers = []string{"tor"}
				}),
				bgpad("hosts", func(s *v1beta1.BGPAdvertisementSpec) {
					s.LocalPref = ptr[int64](200)
					s.LinkBandwidth = v1beta1.LinkBandwidthReadyLocalEndpoints
					s.ServiceSelectors = []metav1.LabelSelector{sel("tier", "web")}
					s.Peers = []string{"ibgp"}
				}),
				bgpad("everywhere", func(s *v1beta1.BGPAdvertisementSpec) { s.Communities = []string{"64512:4"} }),
				bgpad("rack1", func(s *v1beta1.BGPAdvertisementSpec) {
					s.NodeSelectors = []metav1.LabelSelector{sel("rack", "1")}
					s.LocalPref = ptr[int64](100)
					s.Peers = []string{"ibgp"}
				}),
			}, Peers: twoPeers}),
		cfg(t, config.Input{Pools: []*v1beta1.IPAddressPool{nonePool("bgp", "198.51.100.128/27", "2001:db8:ff::/120")},
			BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("all", nil)}, Peers: peers}),
	}
	var revs uint64
	randomService := func(key string) Service {
		s := svc(key, fmt.Sprintf("198.51.100.%d", 128+rng.IntN(6)))
		if rng.IntN(2) == 0 {
			s = svc(key, fmt.Sprintf("2001:db8:ff::%x", 1+rng.IntN(6)))
		}
		switch rng.IntN(6) {
		case 0:
			n := fmt.Sprintf("node%d", 1+rng.IntN(3))
			s = local(s, n)
			s.Endpoints.LocalReady = map[string]int{n: 1 + rng.IntN(3)}
		case 1, 2:
			// Local and sharing: endpoints on a random set of nodes
			var on []string
			for n := range 3 {
				if rng.IntN(2) == 0 {
					on = append(on, fmt.Sprintf("node%d", n+1))
				}
			}
			s = local(s, on...)
			s.SharingKey = "k"
			s.Endpoints.LocalReady = map[string]int{}
			for _, n := range on {
				s.Endpoints.LocalReady[n] = 1 + rng.IntN(3)
			}
		}
		if rng.IntN(2) == 0 {
			s.Labels = map[string]string{"tier": "web"}
		}
		if rng.IntN(5) != 0 {
			revs++
			s.Rev = revs
		}
		return s
	}
	ns := nodes("node1", "node2", "node3")
	st := State{Config: configs[0], Nodes: ns}
	for i := range 8 {
		st.Services = append(st.Services, randomService(fmt.Sprintf("ns/s%d", i)))
	}
	var m, mc BGPMemo // mc is told which Services changed (Update with Keys)
	// the Services sharing a Local address at the last step
	wasShared := map[string]bool{}
	var prev, prevC BGPResult
	next := 8
	for step := range 3000 {
		world, changed := step == 0, 0
		var keys []string
		switch rng.IntN(10) {
		case 0:
			ns[0].Labels = map[string]string{"kubernetes.io/hostname": "node1", "rack": fmt.Sprint(rng.IntN(2))}
			world = true
		case 1:
			c := *configs[rng.IntN(len(configs))]
			st.Config = &c
			world = true
		case 2:
			// another node's eligibility: where a shared Local
			// address goes depends on it
			ns[1].Labels = map[string]string{"kubernetes.io/hostname": "node2"}
			if rng.IntN(2) == 0 {
				ns[1].Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true"
			}
			world = true
		case 3:
			// nothing changed: the memo answers
		case 4:
			key := fmt.Sprintf("ns/s%d", next)
			st.Services = append(st.Services, randomService(key))
			next++
			changed, keys = 1, []string{key}
		case 5:
			if len(st.Services) > 1 {
				i := rng.IntN(len(st.Services))
				keys = []string{st.Services[i].Key}
				st.Services = append(st.Services[:i:i], st.Services[i+1:]...)
			}
		default:
			i := rng.IntN(len(st.Services))
			st.Services[i] = randomService(st.Services[i].Key)
			changed, keys = 1, []string{st.Services[i].Key}
		}
		slices.SortFunc(st.Services, func(a, b Service) int { return strings.Compare(a.Key, b.Key) })
		mc.Update(st, "node1", Changes{Keys: keys})
		if got, want := mc.Result(), BGP(st, "node1"); !reflect.DeepEqual(got, want) {
			for _, s := range st.Services {
				t.Logf("%s %v local=%v %v key=%q rev=%d", s.Key, s.IPs, s.ETPLocal, s.Endpoints.Local, s.SharingKey, s.Rev)
			}
			t.Logf("keys %v node2 %v", keys, ns[1].Labels)
			t.Fatalf("step %d: Update told what changed differs from BGP:\n got %+v\nwant %+v", step, got, want)
		}
		if why := changesExplain(&mc, prevC, BGP(st, "node1"), st); why != "" {
			t.Fatalf("step %d: Update told what changed: %s", step, why)
		}
		prevC = BGP(st, "node1")
		got, want := m.Decide(st, "node1"), BGP(st, "node1")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: memo differs from BGP:\n got %+v\nwant %+v", step, got, want)
		}
		if m.RouteCount() != len(want.Routes) {
			t.Fatalf("step %d: RouteCount %d, want %d", step, m.RouteCount(), len(want.Routes))
		}
		if why := changesExplain(&m, prev, want, st); why != "" {
			t.Fatalf("step %d: %s", step, why)
		}
		prev = want
		if !world {
			if most := changed + revless(st.Services) + sharing(st.Services, wasShared); m.Worked() > most {
				t.Fatalf("step %d: worked out %d Services, want at most %d (changed, or without a Rev)", step, m.Worked(), most)
			}
		}
		wasShared = sharedKeys(st.Services)
	}
}

// sharing counts the Services that share a Local address or did at the
// last step: the memo works them out again when their sharers change.
func sharing(svcs []Service, was map[string]bool) int {
	all := sharedKeys(svcs)
	for k := range was {
		all[k] = true
	}
	return len(all)
}

func sharedKeys(svcs []Service) map[string]bool {
	out := map[string]bool{}
	for _, h := range sharedLocal(svcs) {
		for _, s := range h {
			out[s.Key] = true
		}
	}
	return out
}

func revless(svcs []Service) int {
	n := 0
	for _, s := range svcs {
		if s.Rev == 0 {
			n++
		}
	}
	return n
}

// changesExplain checks the memo's Changes, PrefixRoutes and ServiceRoutes
// against the results before and after a call: every prefix whose routes
// changed is among the changed prefixes (with its new routes), every
// Service whose routes changed among the changed Services or those of the
// changed prefixes' routes, and every Service's routes are those of the
// result that carry it. "" when they are.
func changesExplain(m *BGPMemo, before, after BGPResult, st State) string {
	ch := m.Changes()
	for _, s := range st.Services {
		if got, want := m.ServiceRoutes(s.Key), routesCarrying(after, s.Key); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("ServiceRoutes(%s) = %+v, want %+v", s.Key, got, want)
		}
	}
	if ch.All {
		return ""
	}
	if len(ch.Prefixes)+len(ch.Services) > 0 && m.Same() {
		return "Same with changes"
	}
	affected := map[string]bool{}
	for _, s := range ch.Services {
		affected[s] = true
	}
	for _, p := range ch.Prefixes {
		if got, want := m.PrefixRoutes(p), routesOf(after, p); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("PrefixRoutes(%s) = %+v, want %+v", p, got, want)
		}
		for _, r := range routesOf(after, p) {
			for _, s := range r.Services {
				affected[s] = true
			}
		}
	}
	for _, p := range prefixesOf(before, after) {
		if !reflect.DeepEqual(routesOf(before, p), routesOf(after, p)) && !slices.Contains(ch.Prefixes, p) {
			return fmt.Sprintf("the routes of %s changed, and it is not among the changed prefixes %v", p, ch.Prefixes)
		}
	}
	keys := map[string]bool{}
	for _, r := range append(slices.Clone(before.Routes), after.Routes...) {
		for _, s := range r.Services {
			keys[s] = true
		}
	}
	for s := range keys {
		if !reflect.DeepEqual(routesCarrying(before, s), routesCarrying(after, s)) && !affected[s] {
			return fmt.Sprintf("the routes of Service %s changed, and it is not among those affected", s)
		}
	}
	return ""
}

func routesOf(res BGPResult, p netip.Prefix) []Route {
	var out []Route
	for _, r := range res.Routes {
		if r.Prefix == p {
			out = append(out, r)
		}
	}
	return out
}

func routesCarrying(res BGPResult, key string) []Route {
	var out []Route
	for _, r := range res.Routes {
		if slices.Contains(r.Services, key) {
			out = append(out, r)
		}
	}
	return out
}

func prefixesOf(results ...BGPResult) []netip.Prefix {
	var out []netip.Prefix
	for _, res := range results {
		for _, r := range res.Routes {
			if !slices.Contains(out, r.Prefix) {
				out = append(out, r.Prefix)
			}
		}
	}
	return out
}
