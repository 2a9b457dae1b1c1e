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

// TestBGPMemoEqualsBGP: over random changes to Services (with and without
// a Rev), the node's labels and the configuration, the memo's result
// equals BGP's at every step.
func TestBGPMemoEqualsBGP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	peers := []*v1beta1.BGPPeer{peer("tor", "198.51.100.1", 64512, nil)}
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
	for step := range 2000 {
		switch rng.IntN(8) {
		case 0:
			ns[0].Labels = map[string]string{"kubernetes.io/hostname": "node1", "rack": fmt.Sprint(rng.IntN(2))}
		case 1:
			c := *configs[rng.IntN(len(configs))]
			st.Config = &c
		case 2, 3:
			// nothing changed: the memo answers
		default:
			i := rng.IntN(len(st.Services))
			st.Services[i] = randomService(st.Services[i].Key)
		}
		got, want := m.Decide(st, "node1"), BGP(st, "node1")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: memo differs from BGP:\n got %+v\nwant %+v", step, got, want)
		}
	}
}
