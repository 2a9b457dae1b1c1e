package allocator

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

// Benchmarks of the controller's hot paths. The pools are pure data here
// (no address is configured anywhere): 198.18.0.0/15 is the benchmarking
// range of RFC 2544, 2001:db8::/32 the documentation prefix.

func benchRequest(key string, fam corev1.IPFamily) service.Request {
	return service.Request{
		Key: key, Namespace: "bench",
		Families:     []corev1.IPFamily{fam},
		FamilyPolicy: corev1.IPFamilyPolicySingleStack,
		Ports:        []service.Port{{Protocol: corev1.ProtocolTCP, Port: 443}},
	}
}

// filledAllocator returns an allocator whose one pool has n addresses
// assigned (to Services bench/0 ... bench/n-1).
func filledAllocator(b *testing.B, cidr string, fam corev1.IPFamily, n int) *Allocator {
	b.Helper()
	r, err := iprange.Parse(cidr)
	if err != nil {
		b.Fatal(err)
	}
	a := New()
	if err := a.SetPools([]Pool{{Name: "bench", Ranges: []iprange.Range{r}, AutoAssign: true}}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := a.Assign(benchRequest(fmt.Sprintf("bench/%d", i), fam)); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

func benchAssignRelease(b *testing.B, a *Allocator, fam corev1.IPFamily) {
	req := benchRequest("bench/churn", fam)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Assign(req); err != nil {
			b.Fatal(err)
		}
		a.Release(req.Key)
	}
}

// BenchmarkAssignRelease: one Assign and one Release in a pool that
// already has many addresses assigned.
func BenchmarkAssignRelease(b *testing.B) {
	b.Run("IPv4_slash16_50k_assigned", func(b *testing.B) {
		benchAssignRelease(b, filledAllocator(b, "198.18.0.0/16", corev1.IPv4Protocol, 50_000), corev1.IPv4Protocol)
	})
	b.Run("IPv6_slash64_1M_assigned", func(b *testing.B) {
		benchAssignRelease(b, filledAllocator(b, "2001:db8::/64", corev1.IPv6Protocol, 1_000_000), corev1.IPv6Protocol)
	})
	b.Run("IPv4_slash16_50k_assigned_fragmented", func(b *testing.B) {
		a := filledAllocator(b, "198.18.0.0/16", corev1.IPv4Protocol, 50_000)
		for i := 0; i < 50_000; i += 2 { // every other address free: 25,000 runs
			a.Release(fmt.Sprintf("bench/%d", i))
		}
		benchAssignRelease(b, a, corev1.IPv4Protocol)
	})
}

// BenchmarkRestore50k restores 50,000 assignments, in random order, into a
// fresh allocator, as the controller does at start.
func BenchmarkRestore50k(b *testing.B) {
	const n = 50_000
	r, _ := iprange.Parse("198.18.0.0/16")
	pools := []Pool{{Name: "bench", Ranges: []iprange.Range{r}, AutoAssign: true}}
	reqs := make([]service.Request, n)
	ips := make([][]netip.Addr, n)
	addr := r.First
	for i := range n {
		reqs[i] = benchRequest(fmt.Sprintf("bench/%d", i), corev1.IPv4Protocol)
		ips[i] = []netip.Addr{addr}
		addr = addr.Next()
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { ips[i], ips[j] = ips[j], ips[i] })
	b.ReportAllocs()
	for b.Loop() {
		a := New()
		if err := a.SetPools(pools); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if err := a.Restore(reqs[i], "bench", ips[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/restore")
}

// BenchmarkUsage reads a pool's counts with 50,000 addresses assigned.
func BenchmarkUsage(b *testing.B) {
	a := filledAllocator(b, "198.18.0.0/16", corev1.IPv4Protocol, 50_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = a.Usage("bench")
	}
}
