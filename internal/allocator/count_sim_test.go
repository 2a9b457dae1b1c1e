package allocator

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// countSim drives random Assign, Release and Restore calls with address
// counts from 0 to 4 (herald.dev/address-count) and checks, after each,
// the book's invariants and the rules of several addresses per family:
// all or none, ascending per family, a failed call changes nothing,
// Services sharing an address hold the same addresses of its family.
type countSim struct {
	t     testing.TB
	src   source
	a     *Allocator
	pools []Pool
	keys  []string
	trail []string
	// joins and grown count Assigns that shared addresses of several per
	// family and that changed a held count, so that the test shows it
	// covered them.
	joins, grown int
}

func newCountSim(t testing.TB, src source) *countSim {
	s := &countSim{t: t, src: src, a: New(), keys: []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "other/f"},
		pools: []Pool{pool("small", "198.51.100.0/29", "2001:db8::/125", priority(1)),
			pool("big", "198.51.100.16/28", "2001:db8:1::/124", avoidBuggy(), priority(2))}}
	if err := s.a.SetPools(s.pools); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *countSim) fatalf(format string, args ...any) {
	s.t.Helper()
	trail := s.trail[max(0, len(s.trail)-12):]
	s.t.Fatalf("after %d operations, the last %q: %s", len(s.trail), trail, fmt.Sprintf(format, args...))
}

func (s *countSim) genRequest() service.Request {
	key := s.keys[s.src.intn(len(s.keys))]
	req := svc(key, count(s.src.intn(5)))
	switch s.src.intn(4) {
	case 1:
		requireDual(v4, v6)(&req)
	case 2:
		preferDual(v6, v4)(&req)
	case 3:
		single6()(&req)
	}
	if s.src.intn(2) == 0 {
		req.SharingKey = "k"
	}
	ports([]string{"TCP/80", "TCP/443", "UDP/53"}[s.src.intn(3)])(&req)
	if s.src.intn(6) == 0 {
		req.Pool = []string{"small", "big"}[s.src.intn(2)]
	}
	if s.src.intn(6) == 0 {
		req.RequestedIPs = s.genAddrs(req.Families, max(req.AddressCount, 1))
	}
	return req
}

// genAddrs picks n addresses of each family (sometimes fewer).
func (s *countSim) genAddrs(fams []corev1.IPFamily, n int) []netip.Addr {
	var out []netip.Addr
	for _, f := range fams[:1+s.src.intn(len(fams))] {
		base := netip.MustParseAddr("198.51.100.0")
		if f == v6 {
			base = netip.MustParseAddr("2001:db8::")
		}
		for range n - s.src.intn(2) {
			ip := base
			for range s.src.intn(8) {
				ip = ip.Next()
			}
			out = append(out, ip)
		}
	}
	return out
}

func (s *countSim) step() {
	s.t.Helper()
	before := s.all()
	switch s.src.intn(6) {
	case 0:
		key := s.keys[s.src.intn(len(s.keys))]
		s.trail = append(s.trail, "Release "+key)
		s.a.Release(key)
	case 1:
		s.restore(before)
	default:
		s.assign(before)
	}
	if msg := bookProblem(s.a); msg != "" {
		s.fatalf("%s", msg)
	}
	s.checkHeld()
}

func (s *countSim) assign(before map[string]Assignment) {
	req := s.genRequest()
	s.trail = append(s.trail, fmt.Sprintf("Assign %s n=%d %v key=%q %v pool=%q", req.Key, req.AddressCount, req.Families, req.SharingKey, req.RequestedIPs, req.Pool))
	asg, err := s.a.Assign(req)
	if err != nil {
		s.unchanged(before, "")
		return
	}
	n := max(req.AddressCount, 1)
	if !evenly(asg.IPs, n) || len(asg.IPs) == 0 {
		s.fatalf("%s got %v, want %d of each family", req.Key, asg.IPs, n)
	}
	if fams := familySet(asg.IPs); len(req.RequestedIPs) == 0 && !slices.Contains(fams, req.Families[0]) {
		s.fatalf("%s got %v without its primary family", req.Key, asg.IPs)
	}
	if len(req.RequestedIPs) > 0 && !slices.Equal(asg.IPs, orderByFamilies(req.RequestedIPs, req.Families)) {
		s.fatalf("%s requested %v, got %v", req.Key, req.RequestedIPs, asg.IPs)
	}
	s.unchanged(before, req.Key)
	if old, ok := before[req.Key]; ok && perFamily(old.IPs) != n && len(old.IPs) > 0 {
		s.grown++
	}
	if n > 1 && s.sharedWithOthers(asg) {
		s.joins++
	}
	if again, err := s.a.Assign(req); err != nil || !slices.Equal(again.IPs, asg.IPs) {
		s.fatalf("Assign of %s again: %v, %v; first %v", req.Key, again.IPs, err, asg.IPs)
	}
}

// restore restores what every Service holds into a new Allocator, oldest
// first, as a restart does: the same addresses come back.
func (s *countSim) restore(before map[string]Assignment) {
	s.trail = append(s.trail, "Restart")
	fresh := New()
	if err := fresh.SetPools(s.pools); err != nil {
		s.fatalf("SetPools: %v", err)
	}
	// A yielding Service (displaced by an earlier holder's change) moves
	// on its next sync, and a restart has it conflict: not restored here.
	keys := make([]string, 0, len(before))
	for k := range before {
		if !s.a.book.yielding[k] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y string) int { return cmp.Compare(s.a.book.byKey[x].since, s.a.book.byKey[y].since) })
	for _, k := range keys {
		h := s.a.book.byKey[k]
		r := svc(k, ports(portSpecs(h.ports)...), sharing(h.sharingKey))
		r.Families = familySet(h.ips)
		if len(r.Families) == 2 {
			r.FamilyPolicy = corev1.IPFamilyPolicyRequireDualStack
		}
		if err := fresh.Restore(r, h.pool, h.ips); err != nil {
			s.fatalf("restart: Restore %s %v: %v", k, h.ips, err)
		}
	}
	for _, k := range keys {
		got, _ := fresh.Lookup(k)
		if !slices.Equal(got.IPs, before[k].IPs) || got.Pool != before[k].Pool {
			s.fatalf("restart changed %s from %v to %v", k, before[k], got)
		}
	}
}

// sharedWithOthers reports whether another Service holds one of asg's
// addresses.
func (s *countSim) sharedWithOthers(asg Assignment) bool {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	for _, ip := range asg.IPs {
		if len(s.a.book.addrs[ip].holders) > 1 {
			return true
		}
	}
	return false
}

func portSpecs(ps []service.Port) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%s/%d", p.Protocol, p.Port)
	}
	return out
}

func (s *countSim) all() map[string]Assignment {
	out := map[string]Assignment{}
	for _, k := range s.keys {
		if a, ok := s.a.Lookup(k); ok {
			out[k] = a
		}
	}
	return out
}

func (s *countSim) unchanged(before map[string]Assignment, except string) {
	s.t.Helper()
	after := s.all()
	for _, k := range s.keys {
		if k == except {
			continue
		}
		b, had := before[k]
		a, has := after[k]
		if had != has || !slices.Equal(a.IPs, b.IPs) || a.Pool != b.Pool {
			s.fatalf("%s changed from %v to %v", k, b, a)
		}
	}
}

// checkHeld checks every holder: ascending per family, within the
// maximum, and sharing all of a family's addresses with whoever shares
// one (yielding holders aside: they move on their next Assign).
func (s *countSim) checkHeld() {
	s.t.Helper()
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	for key, h := range s.a.book.byKey {
		fams := familySet(h.ips)
		if !slices.Equal(h.ips, orderByFamilies(h.ips, fams)) || perFamily(h.ips) > service.MaxAddressCount {
			s.fatalf("%s holds %v", key, h.ips)
		}
		for _, ip := range h.ips {
			for _, o := range s.a.book.addrs[ip].holders {
				if s.a.book.yielding[o.key] || s.a.book.yielding[key] {
					continue
				}
				if mine, theirs := ofFamily(h.ips, familyOf(ip)), ofFamily(o.ips, familyOf(ip)); !slices.Equal(mine, theirs) {
					s.fatalf("%s holds %v and %s %v: they share part of them", key, mine, o.key, theirs)
				}
			}
		}
	}
}

func TestAddressCountOperations(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			s := newCountSim(t, randSource{rand.New(rand.NewPCG(seed, 0x636f756e74))})
			for range steps {
				s.step()
			}
			if s.joins == 0 || s.grown == 0 {
				t.Errorf("%d joins of several addresses, %d changes of count: the generator misses a case", s.joins, s.grown)
			}
			t.Logf("%d joins of several addresses, %d changes of count", s.joins, s.grown)
		})
	}
}

// FuzzAddressCount is TestAddressCountOperations driven by fuzz input.
func FuzzAddressCount(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("assign three, share them, restart, release"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		src := &byteSource{b: data}
		s := newCountSim(t, src)
		for src.more() {
			s.step()
		}
	})
}
