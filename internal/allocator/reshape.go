package allocator

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// reshape fills h.pool and h.ips for a changed request that can keep part
// of what old holds: the addresses of the families the request still
// wants stay, a family it now also wants is added from old's pool, a
// larger address count adds the lowest free addresses of old's pool and
// a smaller one keeps the lowest addresses of each family (the highest
// go), and a changed sharing key keeps the addresses old holds alone (or
// with Services the new key may share with). It reports false when the
// request cannot keep any address (then the caller moves the Service).
func (a *Allocator) reshape(old *holder, req *service.Request, pl plan, h *holder) bool {
	if len(pl.requested) > 0 || (req.Pool != "" && old.pool != req.Pool) {
		return false
	}
	// Only the best family set: a fallback (PreferDualStack's single
	// family) is no better than what a fresh allocation may give.
	fams := pl.choices[0]
	var kept []netip.Addr
	var missing []corev1.IPFamily
	short := map[corev1.IPFamily]int{}
	for _, f := range fams {
		have := ofFamily(old.ips, f) // ascending
		switch {
		case len(have) == 0:
			missing = append(missing, f)
		case len(have) >= pl.count:
			kept = append(kept, have[:pl.count]...)
		default:
			kept = append(kept, have...)
			short[f] = pl.count - len(have)
		}
	}
	// Keep only in a pool the request may still be served from: an
	// edit is no reason to stay in a pool it would not get today.
	if len(kept) == 0 || !a.mayKeep(kept, h) || !a.servesFrom(old.pool, req, familySet(kept)) {
		return false
	}
	added, ok := a.addFamilies(old.pool, req, missing, pl.count, h)
	if !ok {
		return false
	}
	p := a.pools.byName[old.pool]
	for _, f := range fams {
		if short[f] == 0 {
			continue
		}
		more, ok := a.lowestFree(p, f, short[f])
		if !ok {
			return false
		}
		added = append(added, more...)
	}
	h.pool = old.pool
	h.ips = orderByFamilies(append(kept, added...), fams)
	return true
}

// mayKeep reports whether h may go on holding ips next to whoever else
// holds them.
func (a *Allocator) mayKeep(ips []netip.Addr, h *holder) bool {
	for _, ip := range ips {
		if ok, _, _ := joinable(a.book.addrs[ip], h); !ok {
			return false
		}
	}
	return true
}

// servesFrom reports whether pool is a candidate for req's families.
func (a *Allocator) servesFrom(pool string, req *service.Request, fams []corev1.IPFamily) bool {
	cands, err := a.pools.candidates(req, fams)
	return err == nil && slices.ContainsFunc(cands, func(p *poolState) bool { return p.Name == pool })
}

// addFamilies picks, in pool, n addresses of each missing family for h;
// the pool must still serve the request for those families.
func (a *Allocator) addFamilies(pool string, req *service.Request, missing []corev1.IPFamily, n int, h *holder) ([]netip.Addr, bool) {
	if len(missing) == 0 {
		return nil, true
	}
	if !a.servesFrom(pool, req, missing) {
		return nil, false
	}
	offer, why := a.offer(a.pools.byName[pool], missing, n, h)
	if why != "" {
		return nil, false
	}
	return offer.ips, true
}
