package allocator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/internal/service"
)

// allocateRequested gives h exactly the requested addresses, from the one
// pool that holds them all and admits the Service.
func (a *Allocator) allocateRequested(req *service.Request, ips []netip.Addr, h *holder) error {
	p, err := a.pools.poolForRequested(req, ips)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if err := a.mayHold(p.Name, ip, h, false); err != nil {
			return err
		}
	}
	if err := a.sharesWhole(ips, h, "requests"); err != nil {
		return err
	}
	h.pool, h.ips = p.Name, ips
	return nil
}

// sharesWhole checks that addresses h would share with other Services
// (requested, or restored) are, in each family, exactly the addresses
// those Services hold: Services sharing addresses share all of them. verb
// says how h names ips ("requests", "holds").
func (a *Allocator) sharesWhole(ips []netip.Addr, h *holder, verb string) error {
	for _, ip := range ips {
		ha, ok := a.book.addrs[ip]
		if !ok {
			continue
		}
		want := ofFamily(ips, familyOf(ip))
		for _, o := range ha.holders {
			theirs := ofFamily(o.ips, familyOf(ip))
			if o.key == h.key || slices.Equal(theirs, want) {
				continue
			}
			return fail(IncompatibleSharing, fmt.Sprintf("%s is shared under key %q by %s, which holds %s; Service %s %s %s, but Services sharing addresses share all of them",
				ip, ha.sharingKey, holderWords(o, h), ipList(theirs), h.key, verb, ipList(want)))
		}
	}
	return nil
}

// poolForRequested returns the pool the requested addresses come from.
func (s *poolSet) poolForRequested(req *service.Request, ips []netip.Addr) (*poolState, error) {
	if req.Pool != "" {
		return s.namedPoolForRequested(req, ips)
	}
	var holding []*poolState
	for _, p := range s.ordered {
		if containsAll(p, ips) {
			holding = append(holding, p)
		}
	}
	if len(holding) == 0 {
		return nil, fail(RequestedIPNotInPool, s.notInPoolMessage(req, ips))
	}
	for _, p := range holding {
		if ok, _ := p.admits(req); ok {
			return p, nil
		}
	}
	_, why := holding[0].admits(req)
	return nil, fail(RequestedIPNotAllowed, fmt.Sprintf("Service %s requests %s, but address pool %s, which holds it, does not admit it: %s",
		req.Key, ipList(ips), holding[0].Name, why))
}

func (s *poolSet) namedPoolForRequested(req *service.Request, ips []netip.Addr) (*poolState, error) {
	p, ok := s.byName[req.Pool]
	if !ok {
		return nil, fail(PoolNotFound, fmt.Sprintf("Service %s names address pool %s, which does not exist", req.Key, req.Pool))
	}
	for _, ip := range ips {
		if !p.contains(ip) {
			return nil, fail(RequestedIPNotInPool, fmt.Sprintf("Service %s requests %s, which is not in address pool %s%s",
				req.Key, ip, p.Name, s.whereIs(ip)))
		}
	}
	if ok, why := p.admits(req); !ok {
		return nil, fail(RequestedIPNotAllowed, fmt.Sprintf("Service %s requests %s from address pool %s, which does not admit it: %s",
			req.Key, ipList(ips), p.Name, why))
	}
	return p, nil
}

func containsAll(p *poolState, ips []netip.Addr) bool {
	for _, ip := range ips {
		if !p.contains(ip) {
			return false
		}
	}
	return true
}

// notInPoolMessage explains why no single pool holds ips.
func (s *poolSet) notInPoolMessage(req *service.Request, ips []netip.Addr) string {
	parts := make([]string, len(ips))
	for i, ip := range ips {
		parts[i] = ip.String() + s.whereIs(ip)
	}
	if len(ips) == 1 {
		return fmt.Sprintf("Service %s requests %s, which is in no address pool", req.Key, ips[0])
	}
	return fmt.Sprintf("Service %s requests %s, but no single address pool holds them all; a Service's addresses come from one pool",
		req.Key, strings.Join(parts, " and "))
}

// whereIs names the pools holding ip, for messages.
func (s *poolSet) whereIs(ip netip.Addr) string {
	var names []string
	for _, p := range s.ordered {
		if p.contains(ip) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return " (it is in no pool)"
	}
	return " (it is in pool " + strings.Join(names, ", ") + ")"
}

// mayHold checks that h may hold ip, attributed to pool, next to whoever
// holds it now. A restored holder keeps what it held (restoring), so the
// pool's consent to sharing across namespaces, needed to join, is not
// asked again: consent withdrawn stops new joins and moves nobody.
func (a *Allocator) mayHold(pool string, ip netip.Addr, h *holder, restoring bool) error {
	ha, ok := a.book.addrs[ip]
	if !ok {
		if a.book.quarantined[ip] {
			return quarantineError(ip, h.key)
		}
		return nil
	}
	first := ha.holders[0]
	if ha.pool != pool {
		return fail(RequestedIPInUse, fmt.Sprintf("%s is held by %s from %s, not from %s", ip, holderWords(first, h), poolWords(ha.pool), poolWords(pool)))
	}
	join := a.mayJoin
	if restoring {
		join = func(ha *heldAddr, h *holder) (bool, *holder, string) { return joinable(ha, h) }
	}
	ok, other, why := join(ha, h)
	switch {
	case ok:
		return nil
	case ha.sharingKey != "" && ha.sharingKey == h.sharingKey:
		return fail(IncompatibleSharing, fmt.Sprintf("%s is shared under key %q by %s, but Service %s cannot join: %s",
			ip, ha.sharingKey, holderWords(other, h), h.key, why))
	default:
		return fail(RequestedIPInUse, fmt.Sprintf("%s is held by %s and cannot be shared with Service %s: %s", ip, holderWords(other, h), h.key, why))
	}
}

func ipList(ips []netip.Addr) string {
	parts := make([]string, len(ips))
	for i, ip := range ips {
		parts[i] = ip.String()
	}
	return strings.Join(parts, " and ")
}

// poolWords names a pool attribution in a message.
func poolWords(pool string) string {
	if pool == "" {
		return "no address pool"
	}
	return "address pool " + pool
}
