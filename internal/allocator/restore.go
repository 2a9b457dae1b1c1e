package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/herald-lb/herald/internal/service"
)

// Restore records an assignment the controller finds in a Service's status
// when it starts, attributed to the pool that contains the addresses.
// pool is what the Service's record says, and tenants can edit records: it
// counts only for addresses no pool contains any more (the assignment is
// then accepted, attributed to it). See restoredPool. It fails with an *Error when an address is held by
// a Service it may not be shared with, or from another pool: restore the
// oldest Service first, and let the loser ask Assign.
func (a *Allocator) Restore(req service.Request, pool string, ips []netip.Addr) error {
	if req.Key == "" {
		return fail(InvalidRequest, "the request has no Service key")
	}
	if err := checkFamilies(&req); err != nil {
		return err
	}
	ordered, err := checkRestored(&req, ips)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pool = a.pools.restoredPool(pool, ordered)
	h := newHolder(&req)
	h.pool, h.ips = pool, ordered
	h.count = perFamily(ordered) // what is held, whatever the annotation asks now
	old, had := a.book.byKey[req.Key]
	if had && old.pool == pool && slices.Equal(old.ips, ordered) && old.sharingKey == h.sharingKey && a.sharesWith(old, h) {
		old.refresh(h)
		return nil
	}
	var yielding bool
	if had {
		yielding = a.unhold(old)
	}
	if err := a.mayRestore(pool, ordered, h); err != nil {
		if had {
			a.rehold(old, yielding)
		}
		return fail(ReasonOf(err), fmt.Sprintf("cannot restore the addresses of Service %s: %s", req.Key, err))
	}
	a.stamp(h, old) // old is nil when !had
	a.hold(h)
	return nil
}

// mayRestore checks that h may hold ips from pool next to whoever holds
// them: compatible, and, as for requested addresses, sharing all of a
// family's addresses with each Service it shares one with (statuses that
// share only part, as an edit can make, would break that rule for good).
func (a *Allocator) mayRestore(pool string, ips []netip.Addr, h *holder) error {
	for _, ip := range ips {
		if err := a.mayHold(pool, ip, h, true); err != nil {
			return err
		}
	}
	return a.sharesWhole(ips, h, "holds")
}

// checkRestored validates the addresses of a restored assignment and puts
// them in the Service's family order.
func checkRestored(req *service.Request, ips []netip.Addr) ([]netip.Addr, error) {
	if len(ips) == 0 {
		return nil, fail(InvalidRequest, fmt.Sprintf("Service %s: nothing to restore", req.Key))
	}
	ordered, err := checkAddrs(req, ips)
	if err != nil {
		return nil, err
	}
	for _, f := range familySet(ordered) {
		if n := len(ofFamily(ordered, f)); n > service.MaxAddressCount {
			return nil, fail(InvalidRequest, fmt.Sprintf("Service %s: %s in its status, at most %d per family",
				req.Key, addressWords(n, f), service.MaxAddressCount))
		}
	}
	return ordered, nil
}

// firstHolding names the first pool, in order, holding all ips ("" if
// none does).
func (s *poolSet) firstHolding(ips []netip.Addr) string {
	for _, p := range s.ordered {
		if containsAll(p, ips) {
			return p.Name
		}
	}
	return ""
}

// restoredPool attributes restored addresses to a pool: named when it
// contains every address; else the first pool containing them all; else,
// when every address is in no pool any more, the pool that records one
// of them as held outside its ranges (see outsideOwner); when only some
// are, named if it contains each of the others (a pool that shrank keeps
// its holders), or else the pool containing the others; else (the
// addresses are split between pools) the pool of the first address.
// named counts for nothing a pool contains.
func (s *poolSet) restoredPool(named string, ips []netip.Addr) string {
	np := s.byName[named]
	if np != nil && containsAll(np, ips) {
		return named
	}
	if p := s.firstHolding(ips); p != "" {
		return p
	}
	var inside []netip.Addr
	for _, ip := range ips {
		if s.holding(ip) != nil {
			inside = append(inside, ip)
		}
	}
	switch {
	case len(inside) == 0:
		return s.outsideOwner(named, ips)
	case np != nil && containsAll(np, inside):
		return named
	case s.firstHolding(inside) != "":
		return s.firstHolding(inside)
	}
	return s.holding(inside[0]).Name
}

// holding returns the first pool, in order, containing ip (nil if none).
func (s *poolSet) holding(ip netip.Addr) *poolState {
	for _, p := range s.ordered {
		if p.contains(ip) {
			return p
		}
	}
	return nil
}

// outsideOwner returns the pool whose status records one of ips as held
// from it outside its ranges. When none does, named (the Service's
// annotation, which its owner can edit) is taken only if that pool has no
// current record at all (OutsideUnrecorded: a status never written, or
// written by a version without the record, as on upgrade) or is not
// configured (its name then attributes the addresses to no configured
// pool, and no pool's advertisements apply to them); otherwise the
// addresses are restored to no pool.
func (s *poolSet) outsideOwner(named string, ips []netip.Addr) string {
	for _, p := range s.ordered {
		for _, ip := range ips {
			if _, ok := slices.BinarySearchFunc(p.HeldOutside, ip, netip.Addr.Compare); ok {
				return p.Name
			}
		}
	}
	if np := s.byName[named]; np == nil || np.OutsideUnrecorded {
		return named
	}
	return ""
}
