package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

// The simulation drives an Allocator with random operations and checks,
// after each one, what the allocator promises against a model built only
// from its public answers and the requests made. TestRandomOperations
// feeds it from a seeded generator, FuzzOperations from fuzz bytes.

// source is where the simulation draws its choices from.
type source interface {
	intn(n int) int
	more() bool
}

// sim is one run: the allocator, the configuration it was given and the
// request behind each assignment.
type sim struct {
	t      testing.TB
	src    source
	a      *Allocator
	pools  []Pool
	reqs   map[string]service.Request // the request that produced each assignment
	byAuto map[string]bool            // whether it came from Assign (not Restore)
	trail  []string                   // recent operations, for failure messages
	label  string                     // "seed N" or "fuzz input", for failure messages
	stats  map[string]int             // outcomes, to show the run explored the rules
	// since dates each assignment (its addresses' last change), so the
	// model knows which holder of a shared address came first; yielding
	// are the later holders an earlier one's change made clash.
	since    map[string]uint64
	clock    uint64
	yielding map[string]bool
	// counts is the address count each key asked for last (see genCount).
	counts map[string]int
}

func newSim(t testing.TB, src source, label string) *sim {
	s := &sim{t: t, src: src, a: New(), reqs: map[string]service.Request{}, byAuto: map[string]bool{}, label: label, stats: map[string]int{},
		since: map[string]uint64{}, yielding: map[string]bool{}, counts: map[string]int{}}
	s.setPools(s.genPools())
	return s
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	start := max(0, len(s.trail)-8)
	s.t.Fatalf("%s, after %d operations (last: %s): %s", s.label, len(s.trail),
		strings.Join(s.trail[start:], " | "), fmt.Sprintf(format, args...))
}

// run performs up to n operations (fewer when the source runs dry).
func (s *sim) run(n int) {
	for i := 0; i < n && s.src.more(); i++ {
		s.step()
	}
}

func (s *sim) step() {
	s.t.Helper()
	before := s.snapshot()
	switch op := s.src.intn(20); {
	case op < 11:
		s.assign(s.genRequest(), before)
	case op < 15:
		key := s.genKey()
		s.trail = append(s.trail, "Release "+key)
		s.a.Release(key)
		s.expectUnchanged(before, key)
		if _, ok := s.a.Lookup(key); ok {
			s.fatalf("%s still holds addresses after Release", key)
		}
		delete(s.reqs, key)
	case op < 18:
		s.restore(before)
	case op < 19:
		s.restart(before)
	default:
		s.setPools(s.genPools())
		s.expectAttributed(before)
	}
	s.track(before)
	s.checkAll()
}

// track dates the assignments whose addresses changed in the last
// operation, and forgets released ones.
func (s *sim) track(before map[string]Assignment) {
	after := s.snapshot()
	for _, key := range slices.Sorted(maps.Keys(after)) {
		if b, had := before[key]; !had || !slices.Equal(b.IPs, after[key].IPs) {
			s.clock++
			s.since[key] = s.clock
			delete(s.yielding, key)
		}
	}
	for key := range before {
		if _, ok := after[key]; !ok {
			delete(s.since, key)
			delete(s.yielding, key)
		}
	}
}

// snapshot is every assignment, by key.
func (s *sim) snapshot() map[string]Assignment {
	out := map[string]Assignment{}
	for _, key := range s.allKeys() {
		if asg, ok := s.a.Lookup(key); ok {
			out[key] = asg
		}
	}
	return out
}

func sameAssignment(x, y Assignment) bool {
	return x.Key == y.Key && x.Pool == y.Pool && slices.Equal(x.IPs, y.IPs)
}

// expectUnchanged checks that no assignment but except's changed.
func (s *sim) expectUnchanged(before map[string]Assignment, except string) {
	s.t.Helper()
	after := s.snapshot()
	for _, m := range []map[string]Assignment{before, after} {
		for key := range m {
			if key == except {
				continue
			}
			if b, a := before[key], after[key]; !sameAssignment(b, a) {
				s.fatalf("%s changed from %v to %v", key, b, a)
			}
		}
	}
}

// expectAttributed checks, after SetPools, that every assignment kept its
// addresses and pool, except that one attributed to no pool may now be
// attributed to a pool containing all its addresses.
func (s *sim) expectAttributed(before map[string]Assignment) {
	s.t.Helper()
	after := s.snapshot()
	for key, b := range before {
		a := after[key]
		if sameAssignment(b, a) {
			continue
		}
		if b.Pool != "" || !slices.Equal(a.IPs, b.IPs) || !s.poolHoldsAll(a.Pool, a.IPs) {
			s.fatalf("%s changed from %v to %v", key, b, a)
		}
	}
	if len(after) != len(before) {
		s.fatalf("SetPools changed the number of assignments from %d to %d", len(before), len(after))
	}
}

func (s *sim) poolHoldsAll(name string, ips []netip.Addr) bool {
	for _, p := range s.pools {
		if p.Name != name {
			continue
		}
		for _, ip := range ips {
			in := false
			for _, r := range p.Ranges {
				in = in || r.Contains(ip)
			}
			if !in {
				return false
			}
		}
		return true
	}
	return false
}

func (s *sim) setPools(pools []Pool) {
	s.trail = append(s.trail, fmt.Sprintf("SetPools(%s)", describePools(pools)))
	if err := s.a.SetPools(pools); err != nil {
		s.fatalf("SetPools: %v", err)
	}
	s.pools = pools
}

func describePools(pools []Pool) string {
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%s%v auto=%v avoid=%v closed=%v", p.Name, p.Ranges, p.AutoAssign, p.AvoidBuggyIPs, p.Closed)
	}
	return strings.Join(parts, "; ")
}

func (s *sim) assign(req service.Request, before map[string]Assignment) {
	s.t.Helper()
	s.trail = append(s.trail, "Assign "+describeRequest(req))
	asg, err := s.a.Assign(req)
	if err != nil {
		if ReasonOf(err) == "" {
			s.fatalf("Assign returned an untyped error: %v", err)
		}
		s.expectUnchanged(before, "")
		s.checkAssignFailure(req, before, err)
		s.stats["Assign failed: "+string(ReasonOf(err))]++
		return
	}
	s.countSuccess(before, asg)
	s.expectUnchanged(before, req.Key)
	if got, _ := s.a.Lookup(req.Key); !sameAssignment(got, asg) {
		s.fatalf("Assign returned %v but Lookup says %v", asg, got)
	}
	s.checkAssignSuccess(req, before, asg)
	s.reqs[req.Key], s.byAuto[req.Key] = req, true
}

func (s *sim) restore(before map[string]Assignment) {
	s.t.Helper()
	req := s.genRequest()
	pool := s.genPoolName()
	// What a status may hold: several of a family, whatever the
	// request's count; rarely more than a status may hold.
	n := 1 + s.src.intn(simMaxCount)
	if s.src.intn(40) == 0 {
		n = service.MaxAddressCount + 1
	}
	ips := s.genRequested(req.Families, n)
	if cur, ok := before[req.Key]; ok && s.src.intn(3) == 0 {
		pool, ips = cur.Pool, cur.IPs // the same addresses, new ports or policy
		req.SharingKey = s.reqs[req.Key].SharingKey
	}
	s.trail = append(s.trail, fmt.Sprintf("Restore %s pool=%q %v", describeRequest(req), pool, ips))
	err := s.a.Restore(req, pool, ips)
	wantOK, wantPool := s.restoreExpected(req, pool, ips, before)
	if (err == nil) != wantOK {
		s.fatalf("Restore: error %v, want success=%v", err, wantOK)
	}
	if err != nil {
		s.expectUnchanged(before, "")
		s.stats["Restore failed: "+string(ReasonOf(err))]++
		return
	}
	s.stats["Restore ok"]++
	s.expectUnchanged(before, req.Key)
	got, _ := s.a.Lookup(req.Key)
	if got.Pool != wantPool || !slices.Equal(got.IPs, orderByFamilies(ips, req.Families)) {
		s.fatalf("restored %v, want pool %q and %v", got, wantPool, ips)
	}
	s.reqs[req.Key], s.byAuto[req.Key] = req, false
}

func describeRequest(r service.Request) string {
	return fmt.Sprintf("%s %s%v n=%d ips=%v pool=%q key=%q ports=%v etp=%v sel=%v labels=%v",
		r.Key, r.FamilyPolicy, r.Families, r.AddressCount, r.RequestedIPs, r.Pool, r.SharingKey, r.Ports, r.ETPLocal, r.Selector, r.Labels)
}

// heldBy returns, from a snapshot, the keys holding each address.
func heldBy(snap map[string]Assignment) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, key := range slices.Sorted(maps.Keys(snap)) {
		for _, ip := range snap[key].IPs {
			out[ip] = append(out[ip], key)
		}
	}
	return out
}

func (s *sim) countSuccess(before map[string]Assignment, asg Assignment) {
	old, had := before[asg.Key]
	switch {
	case had && sameAssignment(old, asg):
		s.stats["Assign kept"]++
	case had:
		s.stats["Assign moved"]++
	default:
		s.stats["Assign new"]++
	}
	if had && perFamily(old.IPs) != perFamily(asg.IPs) {
		s.stats["Assign changed the count"]++
		if slices.ContainsFunc(old.IPs, func(ip netip.Addr) bool { return slices.Contains(asg.IPs, ip) }) {
			s.stats["Assign changed the count, keeping addresses"]++
		}
	}
	others := othersHolding(before, asg.Key)
	for _, ip := range asg.IPs {
		if len(others[ip]) > 0 {
			s.stats["Assign joined a shared address"]++
			if perFamily(asg.IPs) > 1 {
				s.stats["Assign joined a shared address of several per family"]++
			}
		}
	}
	s.stats[fmt.Sprintf("Assign got %d addresses", len(asg.IPs))]++
}

func (s *sim) logStats() {
	for _, k := range slices.Sorted(maps.Keys(s.stats)) {
		s.t.Logf("%6d %s", s.stats[k], k)
	}
}

// restart restores every assignment into a new Allocator, oldest first,
// with each pool's record of addresses held outside its ranges, as the
// controller does when it starts: every Service gets back the addresses
// it held, from the same pool when that pool contains them all (else the
// rules of Restore attribute them). The run goes on with the new
// Allocator unless a Service was to yield (it moves on its next Assign,
// and a restart makes it a conflict instead).
func (s *sim) restart(before map[string]Assignment) {
	s.t.Helper()
	s.trail = append(s.trail, "Restart")
	fresh := New()
	pools := slices.Clone(s.pools)
	for i := range pools {
		pools[i].HeldOutside = s.a.OutsideRanges(pools[i].Name)
	}
	if err := fresh.SetPools(pools); err != nil {
		s.fatalf("restart: SetPools: %v", err)
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if !s.yielding[k] {
			keys = append(keys, k)
		}
	}
	slices.SortStableFunc(keys, func(x, y string) int { return cmp.Compare(s.since[x], s.since[y]) })
	kept := s.pools
	s.pools = pools // for modelRestoredPool
	for _, k := range keys {
		held := before[k]
		if err := fresh.Restore(s.reqs[k], held.Pool, held.IPs); err != nil {
			s.fatalf("restart: Restore %v: %v", held, err)
		}
		got, _ := fresh.Lookup(k)
		want := s.modelRestoredPool(s.reqs[k], held.Pool, held.IPs)
		if !slices.Equal(got.IPs, held.IPs) || got.Pool != want || (s.poolHoldsAll(held.Pool, held.IPs) && got.Pool != held.Pool) {
			s.fatalf("restart: %s held %v, restored %v (want pool %q)", k, held, got, want)
		}
		if got.Pool != held.Pool {
			s.stats["Restart attributed addresses outside their pool anew"]++
			s.byAuto[k] = false // its named pool, if any, waits for its next Assign
		}
	}
	s.stats[fmt.Sprintf("Restart restored %d+ Services", min(len(keys)/5*5, 20))]++
	if len(keys) < len(before) {
		s.pools = kept
		return
	}
	s.a = fresh
	s.stats["Restart: the run goes on with the new Allocator"]++
}
