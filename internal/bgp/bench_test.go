package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// benchPaths returns n /128 paths in 2001:db8:ff::/64: half to every
// session with a community, half to session b only.
func benchPaths(n int) []Path {
	paths := make([]Path, 0, n)
	base := netip.MustParseAddr("2001:db8:ff::").As16()
	for i := range n {
		a := base
		a[13], a[14], a[15] = byte(i>>16), byte(i>>8), byte(i)
		p := Path{Prefix: netip.PrefixFrom(netip.AddrFrom16(a), 128), Communities: []uint32{64512<<16 | 1}}
		if i%2 == 1 {
			p.Peers = []string{"b"}
		}
		paths = append(paths, p)
	}
	return paths
}

// BenchmarkPlan measures the pure part of an Apply that adds one path to
// n: resolving deliveries, diffing and rendering the export policy.
func BenchmarkPlan(b *testing.B) {
	sessions := []Session{}
	for _, s := range []Session{sess("a", "2001:db8:1::1"), sess("b", "2001:db8:1::2")} {
		n, _ := normalize(s)
		sessions = append(sessions, n)
	}
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("prefixes=%d", n), func(b *testing.B) {
			paths := benchPaths(n + 1)
			old := planPaths(paths[:n], sessions, nodeV4, nodeV6)
			b.ResetTimer()
			for range b.N {
				p := planPaths(paths, sessions, nodeV4, nodeV6)
				d := diffPaths(old.rib, p.rib, old.deliveries, p.deliveries)
				_ = buildPolicies(p.deliveries)
				if len(d.announce) != 1 {
					b.Fatalf("announce %d", len(d.announce))
				}
			}
		})
	}
}

// BenchmarkApplyOneMorePath measures a whole Apply against the embedded
// GoBGP server (two sessions, never established) when one path is added to
// or removed from n, and ApplyPaths doing the same.
func BenchmarkApplyOneMorePath(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, how := range []string{"Apply", "ApplyPaths"} {
			b.Run(fmt.Sprintf("prefixes=%d/%s", n, how), func(b *testing.B) {
				s, err := New(Config{Logger: testLogger()})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = s.Shutdown(context.Background()) }()
				// Nothing listens on these ports: the sessions stay Active.
				d := Desired{NodeIPv4: nodeV4, NodeIPv6: nodeV6, Sessions: []Session{
					{Name: "a", PeerAddress: netip.MustParseAddr("127.0.0.5"), PeerPort: 9, MyASN: 64512, PeerASN: 64513,
						ConnectTime: time.Minute, Families: []Family{IPv6Unicast}},
					{Name: "b", PeerAddress: netip.MustParseAddr("127.0.0.6"), PeerPort: 9, MyASN: 64512, PeerASN: 64513,
						ConnectTime: time.Minute, Families: []Family{IPv6Unicast}},
				}}
				all := benchPaths(n + 2)
				d.Paths = all[:n]
				ctx := context.Background()
				if err := s.Apply(ctx, d); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := range b.N {
					if how == "Apply" {
						d.Paths = all[:n+i%2]
						err = s.Apply(ctx, d)
					} else {
						// The path at n goes to every session, as the
						// even paths before it: an edit of their set.
						c := PathChange{Prefixes: []netip.Prefix{all[n].Prefix}}
						if i%2 == 0 {
							c.Paths = all[n : n+1]
						}
						err = s.ApplyPaths(ctx, c)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
