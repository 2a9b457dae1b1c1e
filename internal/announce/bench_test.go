package announce

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
)

// BenchmarkDecide measures the decisions a speaker takes at each
// reconcile, with 1,000 and 10,000 Services on 3 nodes (one address each,
// from an IPv6 pool): BGP for node1 (one peer, one advertisement with a
// community), L2 from scratch, the BGP and L2 memos when nothing
// changed, and the BGP memo when one Service changed (found by comparing
// every Service's revision, or told which, as the speaker tells it) and
// when this node changed (which works every Service out again).
//
// Run it with: go test -run XXX -bench Decide -benchmem ./internal/announce/
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		st := benchState(b, n)
		b.Run(fmt.Sprintf("BGP/%d", n), func(b *testing.B) {
			for range b.N {
				if r := BGP(st, "node1"); len(r.Routes) != n {
					b.Fatalf("%d routes, want %d", len(r.Routes), n)
				}
			}
		})
		b.Run(fmt.Sprintf("BGPMemo-unchanged/%d", n), func(b *testing.B) {
			var m BGPMemo
			m.Decide(st, "node1")
			b.ResetTimer()
			for range b.N {
				m.Decide(st, "node1")
			}
		})
		b.Run(fmt.Sprintf("BGPMemo-one-changed/%d", n), func(b *testing.B) {
			var m BGPMemo
			m.Decide(st, "node1")
			b.ResetTimer()
			for i := range b.N {
				st.Services[i%n].Rev += uint64(n) // a new conversion of one Service
				if r := m.Decide(st, "node1"); len(r.Routes) != n || m.Worked() != 1 {
					b.Fatalf("%d routes, %d worked out; want %d, 1", len(r.Routes), m.Worked(), n)
				}
			}
		})
		b.Run(fmt.Sprintf("BGPMemo-one-changed-told/%d", n), func(b *testing.B) {
			var m BGPMemo
			m.Decide(st, "node1")
			b.ResetTimer()
			for i := range b.N {
				s := &st.Services[i%n]
				s.Rev += uint64(n) // a new conversion of one Service, as the speaker's cache reports it
				m.Update(st, "node1", Changes{Keys: []string{s.Key}})
				if m.RouteCount() != n || m.Worked() != 1 {
					b.Fatalf("%d routes, %d worked out; want %d, 1", m.RouteCount(), m.Worked(), n)
				}
			}
		})
		b.Run(fmt.Sprintf("BGPMemo-node-changed/%d", n), func(b *testing.B) {
			var m BGPMemo
			st := st
			st.Nodes = nodes("node1", "node2", "node3")
			for i := range b.N {
				// a new Node object (informers never change one in place): every
				// Service is worked out again
				st.Nodes[0].Labels = map[string]string{"kubernetes.io/hostname": "node1", "rack": fmt.Sprint(i)}
				if r := m.Decide(st, "node1"); len(r.Routes) != n || m.Worked() != n {
					b.Fatalf("%d routes, %d worked out; want %d, %d", len(r.Routes), m.Worked(), n, n)
				}
			}
		})
		b.Run(fmt.Sprintf("L2/%d", n), func(b *testing.B) {
			for range b.N {
				L2(st)
			}
		})
		spread := st
		spread.Services = nil
		for i := 0; i+2 < len(st.Services); i += 3 {
			// three addresses each (herald.dev/address-count: "3")
			s := st.Services[i]
			s.IPs = []netip.Addr{st.Services[i].IPs[0], st.Services[i+1].IPs[0], st.Services[i+2].IPs[0]}
			spread.Services = append(spread.Services, s)
		}
		b.Run(fmt.Sprintf("L2-spread-by-3/%d", n), func(b *testing.B) {
			for range b.N {
				L2(spread)
			}
		})
		b.Run(fmt.Sprintf("L2Memo-unchanged/%d", n), func(b *testing.B) {
			var m L2Memo
			m.Decide(st)
			b.ResetTimer()
			for range b.N {
				m.Decide(st)
			}
		})
	}
}

func benchState(b *testing.B, n int) State {
	b.Helper()
	c, problems := config.Build(config.Input{
		Pools:             []*v1beta1.IPAddressPool{pool("p", "2001:db8:f::/112")},
		L2Advertisements:  []*v1beta1.L2Advertisement{l2ad("l2", nil)},
		BGPAdvertisements: []*v1beta1.BGPAdvertisement{bgpad("bgp", func(s *v1beta1.BGPAdvertisementSpec) { s.Communities = []string{"64512:100"} })},
		Peers:             []*v1beta1.BGPPeer{peer("tor", "2001:db8:1::1", 64512, nil)},
	})
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	st := State{Config: c, Nodes: nodes("node1", "node2", "node3")}
	for i := range n {
		ip := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 14: byte(i >> 8), 15: byte(i)})
		s := svc(fmt.Sprintf("ns/s%05d", i), ip.String())
		s.Rev = uint64(i + 1)
		st.Services = append(st.Services, s)
	}
	return st
}
