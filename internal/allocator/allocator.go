package allocator

import (
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// Allocator is the controller's address book. It is safe for concurrent
// use; every method is O(log n) in the number of held addresses (times the
// number of pools, for the methods that choose a pool).
type Allocator struct {
	mu     sync.Mutex
	pools  *poolSet
	book   *book
	counts counts
	seq    uint64 // the last holder.since handed out
}

// New returns an Allocator with no pools and no assignments.
func New() *Allocator {
	pools, _ := newPoolSet(nil)
	return &Allocator{pools: pools, book: newBook(), counts: counts{}}
}

// SetPools replaces the pool configuration. Every assignment stays: an
// address whose pool shrank, changed or went away stays held (counted as
// outside its pool's ranges) and is handed to nobody else. On error
// (unnamed or duplicate pools, invalid ranges or selectors) the previous
// configuration stays.
func (a *Allocator) SetPools(pools []Pool) error {
	set, err := newPoolSet(pools)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pools = set
	a.attributeOrphans()
	a.counts = counts{}
	for ip, ha := range a.book.addrs { // sums only: order does not matter
		a.counts.addressTaken(ip, ha.pool, set, +1)
	}
	for _, h := range a.book.byKey {
		a.counts.of(h.pool).holders++
	}
	return nil
}

// Assign gives req's Service its addresses. It is idempotent: when the
// Service already holds addresses that still satisfy what it explicitly
// asks for (families, requested addresses, named pool, sharing key, and
// compatibility with the Services sharing them), it gets them back
// unchanged, whatever happened to the pools since. When the request changed
// but still allows some of its addresses (a family added or dropped, a
// sharing key added to an address it holds alone), those stay and only the
// difference is allocated or released. Otherwise its addresses are released
// and new ones allocated; when that fails the error is an *Error and the
// old assignment stays in place (Lookup still returns it). Released
// addresses are free at once; the controller quarantines them (Quarantine)
// until the Service's new status is written. A Service that keeps a
// shared address although its change makes Services that joined it later
// clash with it gets their keys in Displaced: they move, it stays.
func (a *Allocator) Assign(req service.Request) (Assignment, error) {
	pl, err := makePlan(&req)
	if err != nil {
		return Assignment{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h := newHolder(&req)
	old, had := a.book.byKey[req.Key]
	if had && a.satisfies(old, &req, pl, h) {
		old.refresh(h)
		old.refused = ""
		delete(a.book.yielding, old.key)
		asg := old.assignment()
		asg.Displaced = a.displace(old)
		return asg, nil
	}
	if had && a.reshape(old, &req, pl, h) {
		a.unhold(old)
		a.stamp(h, old)
		a.hold(h)
		return h.assignment(), nil
	}
	var yielding bool
	if had {
		yielding = a.unhold(old)
	}
	if err := a.allocate(&req, pl, h); err != nil {
		if had {
			a.rehold(old, yielding)
		}
		return Assignment{}, err
	}
	a.stamp(h, old) // old is nil when !had
	a.hold(h)
	return h.assignment(), nil
}

// stamp dates h: it keeps old's date when it holds the same addresses,
// else it is the newest holder.
func (a *Allocator) stamp(h, old *holder) {
	if old != nil && slices.Equal(old.ips, h.ips) {
		h.since = old.since
		return
	}
	a.seq++
	h.since = a.seq
}

// displace marks the holders that came after h to one of its addresses
// and may no longer share it with h (h changed its ports, or its policy)
// as yielding, and returns their keys, sorted: each moves on its next
// Assign, h stays.
func (a *Allocator) displace(h *holder) []string {
	var out []string
	for _, ip := range h.ips {
		for _, o := range a.book.addrs[ip].holders {
			if o.since <= h.since || slices.Contains(out, o.key) {
				continue
			}
			if ok, _ := compatible(o, h); !ok {
				out = append(out, o.key)
				a.book.yielding[o.key] = true
			}
		}
	}
	slices.Sort(out)
	return out
}

// Release frees the addresses key holds; an address shared with other
// Services stays theirs. Releasing an unknown key does nothing.
func (a *Allocator) Release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.book.byKey[key]; ok {
		a.unhold(h)
	}
}

// Lookup returns what key holds.
func (a *Allocator) Lookup(key string) (Assignment, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.book.byKey[key]
	if !ok {
		return Assignment{}, false
	}
	return h.assignment(), true
}

// Usage returns the address counts of a pool. A pool that is no longer
// configured reports only what its holders keep, as OutsideRanges.
func (a *Allocator) Usage(pool string) Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts.usage(pool, a.pools)
}

// OutsideRanges returns the addresses Services hold from pool that its
// current ranges do not contain (what Usage counts as OutsideRanges),
// sorted: the record the controller writes in the pool's status.
func (a *Allocator) OutsideRanges(pool string) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts.outsideAddrs(pool)
}

// Holders returns how many Services hold addresses attributed to pool
// (a deleted pool's finalizer may go when this is 0).
func (a *Allocator) Holders(pool string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if pc := a.counts[pool]; pc != nil {
		return pc.holders
	}
	return 0
}

// hold records h's addresses in the book and the counts.
func (a *Allocator) hold(h *holder) {
	for _, ip := range h.ips {
		if a.book.add(ip, h) {
			a.counts.addressTaken(ip, h.pool, a.pools, +1)
		}
	}
	a.book.byKey[h.key] = h
	a.counts.of(h.pool).holders++
}

// rehold puts back a holder unhold forgot, after a failed call: a
// Service that was to yield still is (the failure changes nothing).
func (a *Allocator) rehold(h *holder, yielding bool) {
	a.hold(h)
	if yielding {
		a.book.yielding[h.key] = true
	}
}

// unhold forgets h and reports whether it was to yield (see displace).
func (a *Allocator) unhold(h *holder) (yielding bool) {
	for _, ip := range h.ips {
		if a.book.drop(ip, h) {
			a.counts.addressTaken(ip, h.pool, a.pools, -1)
		}
	}
	delete(a.book.byKey, h.key)
	yielding = a.book.yielding[h.key]
	delete(a.book.yielding, h.key)
	pc := a.counts.of(h.pool)
	pc.holders--
	if pc.zero() {
		if _, configured := a.pools.byName[h.pool]; !configured {
			delete(a.counts, h.pool)
		}
	}
	return yielding
}

// satisfies reports whether old still answers req (see Assign); h is the
// holder req would make.
func (a *Allocator) satisfies(old *holder, req *service.Request, pl plan, h *holder) bool {
	switch {
	case len(pl.requested) > 0 && !slices.Equal(old.ips, pl.requested):
		return false
	case req.Pool != "" && old.pool != req.Pool:
		return false
	case old.sharingKey != req.SharingKey:
		return false
	case !slices.ContainsFunc(pl.choices, func(fams []corev1.IPFamily) bool { return slices.Equal(fams, familySet(old.ips)) }):
		return false
	case !evenly(old.ips, pl.count):
		return false
	}
	return a.sharesWithEarlier(old, h)
}

// sharesWithEarlier reports whether h, a newer version of old's Service,
// is compatible with every Service that held one of old's addresses
// before old did. Those that came later yield when they clash: the first
// holder of a shared address never moves for a later one's sake.
func (a *Allocator) sharesWithEarlier(old, h *holder) bool {
	for _, ip := range old.ips {
		for _, o := range a.book.addrs[ip].holders {
			if o.key == h.key || o.since > old.since {
				continue
			}
			if ok, _ := compatible(o, h); !ok {
				return false
			}
		}
	}
	return true
}

// sharesWith reports whether h, a newer holder for old's Service, is
// compatible with everyone else holding old's addresses.
func (a *Allocator) sharesWith(old, h *holder) bool {
	for _, ip := range old.ips {
		if ok, _, _ := joinable(a.book.addrs[ip], h); !ok {
			return false
		}
	}
	return true
}

// attributeOrphans gives a pool to assignments restored when no pool
// contained their addresses, once a pool does (so the pool counts them and
// the Service's pool annotation can be written). An address shared with
// other Services stays as it is: its holders must agree on one pool.
func (a *Allocator) attributeOrphans() {
	for _, h := range a.book.byKey {
		if h.pool != "" || a.sharesAny(h) {
			continue
		}
		p := a.pools.firstHolding(h.ips)
		if p == "" {
			continue
		}
		h.pool = p
		for _, ip := range h.ips {
			if ha := a.book.addrs[ip]; ha != nil && ha.pool == "" {
				ha.pool = p
			}
		}
	}
}

// sharesAny reports whether another Service holds one of h's addresses.
func (a *Allocator) sharesAny(h *holder) bool {
	for _, ip := range h.ips {
		if ha := a.book.addrs[ip]; ha != nil && len(ha.holders) > 1 {
			return true
		}
	}
	return false
}
