package allocator

import (
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// Checks the simulation makes after each operation.

func (s *sim) checkAssignSuccess(req service.Request, before map[string]Assignment, asg Assignment) {
	s.t.Helper()
	if !modelValid(req) {
		s.fatalf("Assign accepted an invalid request")
	}
	old, had := before[req.Key]
	if had && s.modelSatisfies(old, req, before) {
		if !sameAssignment(old, asg) {
			s.fatalf("moved %v to %v although the old addresses still satisfy the request", old, asg)
		}
		if want := s.modelDisplaced(old, req, before); !slices.Equal(want, asg.Displaced) {
			s.fatalf("%v displaced %v, want %v", asg, asg.Displaced, want)
		}
		delete(s.yielding, req.Key)
		if len(asg.Displaced) > 0 {
			s.stats["Assign kept, displacing later holders"]++
		}
		for _, k := range asg.Displaced {
			s.yielding[k] = true
		}
		return
	}
	s.checkSatisfies(req, asg)
	if had {
		if pool, ips, ok := s.modelReshape(old, req, before); ok {
			if req.SharingKey == "" && (pool != asg.Pool || !slices.Equal(ips, asg.IPs)) {
				s.fatalf("got %v, keeping what the changed request allows gives pool %q %v", asg, pool, ips)
			}
			return
		}
		// With a sharing key, what the request keeps may be completed by
		// joining addresses shared under it (covered by the table tests).
		if k, ok := s.modelKept(old, req, before); ok && req.SharingKey != "" && asg.Pool == old.Pool &&
			!slices.ContainsFunc(k.kept, func(ip netip.Addr) bool { return !slices.Contains(asg.IPs, ip) }) {
			return
		}
	}
	s.checkFreshPool(req, asg)
	others := othersHolding(before, req.Key)
	for _, ip := range asg.IPs {
		if len(others[ip]) > 0 && req.SharingKey == "" {
			s.fatalf("%s took %s from %v without a sharing key", req.Key, ip, others[ip])
		}
	}
	if req.SharingKey != "" {
		return // which shared address is joined is covered by the table tests
	}
	pool, ips, ok := s.expectNew(req, before)
	if !ok || pool != asg.Pool || !slices.Equal(ips, asg.IPs) {
		s.fatalf("got %v, the rules give pool %q %v (possible=%v)", asg, pool, ips, ok)
	}
}

// checkSatisfies checks that asg answers req's explicit wishes.
func (s *sim) checkSatisfies(req service.Request, asg Assignment) {
	s.t.Helper()
	fams := familySet(asg.IPs)
	if !slices.ContainsFunc(modelChoices(req), func(c []corev1.IPFamily) bool { return slices.Equal(c, fams) }) {
		s.fatalf("%v has families %v, the request allows %v", asg, fams, modelChoices(req))
	}
	if !evenly(asg.IPs, countOf(&req)) {
		s.fatalf("%v does not hold %d addresses of each family", asg, countOf(&req))
	}
	if len(req.RequestedIPs) > 0 && !slices.Equal(asg.IPs, orderByFamilies(req.RequestedIPs, req.Families)) {
		s.fatalf("%v is not the requested %v", asg, req.RequestedIPs)
	}
	if req.Pool != "" && asg.Pool != req.Pool {
		s.fatalf("%v is not from the named pool %s", asg, req.Pool)
	}
}

// checkFreshPool checks that newly allocated addresses come from a pool
// that may hand them out.
func (s *sim) checkFreshPool(req service.Request, asg Assignment) {
	s.t.Helper()
	i := slices.IndexFunc(s.pools, func(p Pool) bool { return p.Name == asg.Pool })
	if i < 0 {
		s.fatalf("%v comes from a pool that is not configured", asg)
	}
	p := s.pools[i]
	if !modelAdmits(p, req) {
		s.fatalf("%v comes from pool %s, which does not admit the Service", asg, p.Name)
	}
	if req.Pool == "" && len(req.RequestedIPs) == 0 && !p.AutoAssign {
		s.fatalf("%v comes from pool %s, which has autoAssign off", asg, p.Name)
	}
	for _, ip := range asg.IPs {
		if !modelContains(p, ip) {
			s.fatalf("%v: %s is not in pool %s", asg, ip, p.Name)
		}
		if modelSkips(p, ip) && !slices.Contains(req.RequestedIPs, ip) && req.SharingKey == "" {
			s.fatalf("%v: %s ends in .0 or .255 in an avoidBuggyIPs pool, or is reserved", asg, ip)
		}
	}
}

func (s *sim) checkAssignFailure(req service.Request, before map[string]Assignment, err error) {
	s.t.Helper()
	if !modelValid(req) {
		if ReasonOf(err) != InvalidRequest {
			s.fatalf("invalid request failed with %s: %v", ReasonOf(err), err)
		}
		return
	}
	if old, had := before[req.Key]; had && s.modelSatisfies(old, req, before) {
		s.fatalf("Assign failed (%v) although %v still satisfies the request", err, old)
	}
	if old, had := before[req.Key]; had && req.SharingKey == "" {
		if _, ips, ok := s.modelReshape(old, req, before); ok {
			s.fatalf("Assign failed (%v) although the request may keep part of %v (giving %v)", err, old, ips)
		}
	}
	if req.SharingKey != "" {
		return
	}
	if pool, ips, ok := s.expectNew(req, before); ok {
		s.fatalf("Assign failed (%v), the rules give pool %s %v", err, pool, ips)
	}
}

// checkAll checks the invariants that hold after any operation.
func (s *sim) checkAll() {
	s.t.Helper()
	if msg := bookProblem(s.a); msg != "" {
		s.fatalf("internal state: %s", msg)
	}
	snap := s.snapshot()
	for key, asg := range snap {
		req, ok := s.reqs[key]
		if !ok {
			s.fatalf("%s holds %v without a request", key, asg)
		}
		if fams := familySet(asg.IPs); len(fams) == 0 || slices.ContainsFunc(fams, func(f corev1.IPFamily) bool { return !slices.Contains(req.Families, f) }) {
			s.fatalf("%s holds %v, outside its families %v", key, asg.IPs, req.Families)
		}
		if !slices.Equal(asg.IPs, orderByFamilies(asg.IPs, req.Families)) || perFamily(asg.IPs) > service.MaxAddressCount {
			s.fatalf("%s holds %v: not in family order, ascending, at most %d of a family", key, asg.IPs, service.MaxAddressCount)
		}
		if s.byAuto[key] {
			s.checkSatisfies(req, asg)
		}
	}
	s.checkSharing(snap)
	s.checkUsage(snap)
}

func (s *sim) checkSharing(snap map[string]Assignment) {
	s.t.Helper()
	for ip, keys := range heldBy(snap) {
		for i, k := range keys {
			if snap[k].Pool != snap[keys[0]].Pool {
				s.fatalf("%s is attributed to two pools", ip)
			}
			for _, o := range keys[i+1:] {
				later := o
				if s.since[k] > s.since[o] {
					later = k
				}
				if s.yielding[later] {
					continue
				}
				if !s.modelCompatible(s.reqs[k], snap[k].IPs, o, snap) {
					s.fatalf("%s is held by %s and %s, which may not share it", ip, k, o)
				}
				if mine, theirs := ofFamily(snap[k].IPs, familyOf(ip)), ofFamily(snap[o].IPs, familyOf(ip)); !slices.Equal(mine, theirs) {
					s.fatalf("%s is held by %s (holding %v) and %s (holding %v): Services sharing an address share all of its family", ip, k, mine, o, theirs)
				}
			}
		}
	}
}

func (s *sim) checkUsage(snap map[string]Assignment) {
	s.t.Helper()
	names := map[string]int{}
	for _, p := range s.pools {
		names[p.Name] += 0
	}
	for _, asg := range snap {
		names[asg.Pool]++
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name == "" {
			continue
		}
		if got, want := s.a.Usage(name), s.modelUsage(name, snap); got != want {
			s.fatalf("Usage(%s) = %+v, want %+v", name, got, want)
		}
		if got := s.a.Holders(name); got != names[name] {
			s.fatalf("Holders(%s) = %d, want %d", name, got, names[name])
		}
	}
}
