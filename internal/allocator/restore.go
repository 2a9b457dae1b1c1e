package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Restore records an assignment the controller finds in a Service's status
// when it starts, attributed to pool ("" attributes it to the first pool
// holding all ips, if any). It is accepted even when no pool contains the
// addresses any more. It fails with an *Error when an address is held by
// a Service it may not be shared with, or from another pool: restore the
// oldest Service first, and let the loser ask Assign.
func (a *Allocator) Restore(req Request, pool string, ips []netip.Addr) error {
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
	if pool == "" {
		pool = a.pools.firstHolding(ordered)
	}
	h := newHolder(&req)
	h.pool, h.ips = pool, ordered
	old, had := a.book.byKey[req.Key]
	if had && old.pool == pool && slices.Equal(old.ips, ordered) && old.sharingKey == h.sharingKey && a.sharesWith(old, h) {
		old.refresh(h)
		return nil
	}
	if had {
		a.unhold(old)
	}
	for _, ip := range ordered {
		if err := a.mayHold(pool, ip, h); err != nil {
			if had {
				a.hold(old)
			}
			return fail(ReasonOf(err), fmt.Sprintf("cannot restore the addresses of Service %s: %s", req.Key, err))
		}
	}
	a.hold(h)
	return nil
}

// checkRestored validates the addresses of a restored assignment and puts
// them in the Service's family order.
func checkRestored(req *Request, ips []netip.Addr) ([]netip.Addr, error) {
	if len(ips) == 0 {
		return nil, fail(InvalidRequest, fmt.Sprintf("Service %s: nothing to restore", req.Key))
	}
	probe := *req
	probe.RequestedIPs = ips
	probe.FamilyPolicy = corev1.IPFamilyPolicyPreferDualStack // one or two families
	if _, err := checkRequested(&probe); err != nil {
		return nil, err
	}
	return orderByFamilies(ips, req.Families), nil
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
