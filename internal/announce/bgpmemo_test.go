package announce

import (
	"fmt"
	"math/rand/v2"
	"reflect"
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
				bgpad("all", func(s *v1beta1.BGPAdvertisementSpec) { s.Communities = []string{"64512:1"} }),
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
	}
	var revs uint64
	randomService := func(key string) Service {
		s := svc(key, fmt.Sprintf("198.51.100.%d", 128+rng.IntN(6)))
		if rng.IntN(2) == 0 {
			s = svc(key, fmt.Sprintf("2001:db8:ff::%x", 1+rng.IntN(6)))
		}
		if rng.IntN(4) == 0 {
			s = local(s, fmt.Sprintf("node%d", 1+rng.IntN(3)))
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
	var m BGPMemo
	next := 8
	for step := range 3000 {
		world, changed := step == 0, 0
		switch rng.IntN(10) {
		case 0:
			ns[0].Labels = map[string]string{"kubernetes.io/hostname": "node1", "rack": fmt.Sprint(rng.IntN(2))}
			world = true
		case 1:
			c := *configs[rng.IntN(len(configs))]
			st.Config = &c
			world = true
		case 2, 3:
			// nothing changed: the memo answers
		case 4:
			st.Services = append(st.Services, randomService(fmt.Sprintf("ns/s%d", next)))
			next++
			changed = 1
		case 5:
			if len(st.Services) > 1 {
				i := rng.IntN(len(st.Services))
				st.Services = append(st.Services[:i:i], st.Services[i+1:]...)
			}
		default:
			i := rng.IntN(len(st.Services))
			st.Services[i] = randomService(st.Services[i].Key)
			changed = 1
		}
		got, want := m.Decide(st, "node1"), BGP(st, "node1")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: memo differs from BGP:\n got %+v\nwant %+v", step, got, want)
		}
		if !world {
			if most := changed + revless(st.Services); m.Worked() > most {
				t.Fatalf("step %d: worked out %d Services, want at most %d (changed, or without a Rev)", step, m.Worked(), most)
			}
		}
	}
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
