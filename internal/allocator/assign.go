package allocator

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// allocate fills h.pool and h.ips for a request whose Service holds
// nothing (its old addresses, if any, are already released).
func (a *Allocator) allocate(req *service.Request, pl plan, h *holder) error {
	if len(pl.requested) > 0 {
		return a.allocateRequested(req, pl.requested, h)
	}
	var err error
	for _, fams := range pl.choices {
		if err = a.allocateFamilies(req, fams, pl.count, h); err == nil {
			return nil
		}
	}
	return err
}

// pick is one pool's offer for a request.
type pick struct {
	pool  *poolState
	ips   []netip.Addr
	joins int // families whose addresses are shared with Services under the same key
	// clash says why an address held under the key was not joined.
	clash string
}

// allocateFamilies takes n addresses of each family in fams from the
// first candidate pool that has them all, preferring, for a Service with a
// sharing key, the pool where it shares the most families.
func (a *Allocator) allocateFamilies(req *service.Request, fams []corev1.IPFamily, n int, h *holder) error {
	cands, err := a.pools.candidates(req, fams)
	if err != nil {
		return err
	}
	var best pick
	var short []string
	for _, p := range cands {
		offer, why := a.offer(p, fams, n, h)
		if why != "" {
			short = append(short, why)
			continue
		}
		if best.pool == nil || offer.joins > best.joins {
			best = offer
		}
		if h.sharingKey == "" || best.joins == len(fams) {
			break
		}
	}
	if best.pool == nil {
		return fail(PoolExhausted, fmt.Sprintf("no free address for Service %s: %s", req.Key, strings.Join(short, "; ")))
	}
	h.pool, h.ips = best.pool.Name, best.ips
	if best.joins < len(fams) {
		h.refused = best.clash
	}
	return nil
}

// offer picks, in pool p, n addresses of each family for h: the
// addresses of a Service sharing under h's sharing key when h may join
// them all, else the n lowest free ones. why says what is missing when p
// cannot serve.
func (a *Allocator) offer(p *poolState, fams []corev1.IPFamily, n int, h *holder) (pick, string) {
	out := pick{pool: p, ips: make([]netip.Addr, 0, n*len(fams))}
	for _, f := range fams {
		group, ok, clash := a.sharedGroup(p, f, h)
		if ok {
			out.ips = append(out.ips, group...)
			out.joins++
			continue
		}
		if out.clash == "" {
			out.clash = clash
		}
		free, ok := a.lowestFree(p, f, n)
		if !ok {
			why := fmt.Sprintf("pool %s has no free %s address", p.Name, f)
			if n > 1 {
				why = fmt.Sprintf("pool %s has fewer than %d free %s addresses (the Service asks for %d per family, %s)",
					p.Name, n, f, n, v1beta1.AnnotationAddressCount)
			}
			if clash != "" {
				why += " and " + clash
			}
			return pick{}, why
		}
		out.ips = append(out.ips, free...)
	}
	return out, ""
}

// sharedGroup finds, in pool p, the addresses of family f that a Service
// holding under h's sharing key holds and h may join, all of them: a
// Service sharing addresses shares every one (its address count equals
// theirs, see compatible). It takes the group of the lowest address h may
// join; clash explains the first address it could not join.
func (a *Allocator) sharedGroup(p *poolState, f corev1.IPFamily, h *holder) (group []netip.Addr, ok bool, clash string) {
	if h.sharingKey == "" {
		return nil, false, ""
	}
	for _, cand := range a.book.shared[h.sharingKey] {
		ha := a.book.addrs[cand]
		if familyOf(cand) != f || ha.pool != p.Name || !p.contains(cand) {
			continue
		}
		group, other, why := a.joinGroup(p, ha, f, h)
		if other == nil {
			return group, true, ""
		}
		if clash == "" && other.namespace == h.namespace {
			clash = fmt.Sprintf("%s, shared under key %q, cannot be shared with Service %s: %s", cand, h.sharingKey, other.key, why)
		} else if clash == "" {
			clash = fmt.Sprintf("key %q is in use in another namespace, where it cannot be joined: %s", h.sharingKey, why)
		}
	}
	return nil, false, clash
}

// joinGroup returns the addresses of family f held by the first holder of
// ha other than h, when h may join each of them in pool p; otherwise
// the holder in the way (non-nil) and why.
func (a *Allocator) joinGroup(p *poolState, ha *heldAddr, f corev1.IPFamily, h *holder) ([]netip.Addr, *holder, string) {
	var first *holder
	for _, o := range ha.holders {
		if o.key != h.key {
			first = o
			break
		}
	}
	if first == nil {
		return nil, ha.holders[0], "it is the Service's own address"
	}
	group := ofFamily(first.ips, f)
	for _, ip := range group {
		g := a.book.addrs[ip]
		if g.pool != p.Name || !p.contains(ip) {
			return nil, first, fmt.Sprintf("its address %s is not in pool %s", ip, p.Name)
		}
		if ok, other, why := a.mayJoin(g, h); !ok {
			return nil, other, why
		}
	}
	if len(group) != h.count {
		return nil, first, fmt.Sprintf("it holds %s, the Service asks for %d (%s); Services sharing addresses share all of them",
			addressWords(len(group), f), h.count, v1beta1.AnnotationAddressCount)
	}
	return group, nil, ""
}

// lowestFree returns the pool's n lowest free addresses of family f, past
// its reserved addresses, ascending; false when it has fewer.
func (a *Allocator) lowestFree(p *poolState, f corev1.IPFamily, n int) ([]netip.Addr, bool) {
	out := make([]netip.Addr, 0, n)
	for _, r := range p.rangesOf(f) {
		for len(out) < n {
			ip, ok := a.book.taken.lowestFree(r, p.AvoidBuggyIPs)
			if !ok {
				break
			}
			if !p.reserved[ip] {
				out = append(out, ip)
			}
			if ip == r.Last {
				break
			}
			r.First = ip.Next()
		}
		if len(out) == n {
			return out, true
		}
	}
	return nil, false
}
