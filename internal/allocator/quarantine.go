package allocator

import (
	"fmt"
	"net/netip"
)

// Quarantine keeps free addresses from being handed out until
// Unquarantine: the controller quarantines the addresses a Service gives up
// (moved, released, deleted) until its new status is written and, after
// that, for a short hold time, so that no client still holding the old
// address (ARP cache, DNS, a status not yet rewritten) reaches another
// Service. Addresses still held by a Service are skipped. A quarantined
// address is neither chosen as a lowest free address nor granted to a
// request naming it; it still counts as available in Usage.
func (a *Allocator) Quarantine(ips []netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range ips {
		if a.book.held(ip) {
			continue
		}
		a.book.quarantined[ip] = true
		a.book.taken.add(ip)
	}
}

// Unquarantine ends the quarantine of ips (addresses not quarantined are
// skipped).
func (a *Allocator) Unquarantine(ips []netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range ips {
		if !a.book.quarantined[ip] {
			continue
		}
		delete(a.book.quarantined, ip)
		if !a.book.held(ip) {
			a.book.taken.remove(ip, a.book.held)
		}
	}
}

// Quarantined reports whether ip is quarantined.
func (a *Allocator) Quarantined(ip netip.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.book.quarantined[ip]
}

// quarantineError is why a request may not have a quarantined address.
func quarantineError(ip netip.Addr, key string) error {
	return fail(RequestedIPInUse, fmt.Sprintf("%s was released moments ago and is held back for a short time before it is handed out again; Service %s gets it then", ip, key))
}
