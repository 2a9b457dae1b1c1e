package allocator

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

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
		if err = a.allocateFamilies(req, fams, h); err == nil {
			return nil
		}
	}
	return err
}

// pick is one pool's offer for a request.
type pick struct {
	pool  *poolState
	ips   []netip.Addr
	joins int // addresses shared with Services under the same key
	// clash says why an address held under the key was not joined.
	clash string
}

// allocateFamilies takes one address of each family in fams from the
// first candidate pool that has them all, preferring, for a Service with a
// sharing key, the pool where it shares the most addresses.
func (a *Allocator) allocateFamilies(req *service.Request, fams []corev1.IPFamily, h *holder) error {
	cands, err := a.pools.candidates(req, fams)
	if err != nil {
		return err
	}
	var best pick
	var short []string
	for _, p := range cands {
		offer, why := a.offer(p, fams, h)
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

// offer picks, in pool p, an address of each family for h: one shared
// under h's sharing key when possible, else the lowest free one. why says
// what is missing when p cannot serve.
func (a *Allocator) offer(p *poolState, fams []corev1.IPFamily, h *holder) (pick, string) {
	out := pick{pool: p, ips: make([]netip.Addr, 0, len(fams))}
	for _, f := range fams {
		ip, ok, clash := a.sharedAddress(p, f, h)
		if ok {
			out.ips = append(out.ips, ip)
			out.joins++
			continue
		}
		if out.clash == "" {
			out.clash = clash
		}
		if ip, ok = a.lowestFree(p, f); !ok {
			why := fmt.Sprintf("pool %s has no free %s address", p.Name, f)
			if clash != "" {
				why += " and " + clash
			}
			return pick{}, why
		}
		out.ips = append(out.ips, ip)
	}
	return out, ""
}

// sharedAddress finds, in pool p, the lowest address of family f held
// under h's sharing key that h may join. clash explains the first address
// it could not join.
func (a *Allocator) sharedAddress(p *poolState, f corev1.IPFamily, h *holder) (ip netip.Addr, ok bool, clash string) {
	if h.sharingKey == "" {
		return netip.Addr{}, false, ""
	}
	for _, cand := range a.book.shared[h.sharingKey] {
		ha := a.book.addrs[cand]
		if familyOf(cand) != f || ha.pool != p.Name || !p.contains(cand) {
			continue
		}
		ok, other, why := a.mayJoin(ha, h)
		if ok {
			return cand, true, ""
		}
		if clash == "" && other.namespace == h.namespace {
			clash = fmt.Sprintf("%s, shared under key %q, cannot be shared with Service %s: %s", cand, h.sharingKey, other.key, why)
		} else if clash == "" {
			clash = fmt.Sprintf("key %q is in use in another namespace, where it cannot be joined: %s", h.sharingKey, why)
		}
	}
	return netip.Addr{}, false, clash
}

// lowestFree returns the pool's lowest free address of family f, past
// its reserved addresses.
func (a *Allocator) lowestFree(p *poolState, f corev1.IPFamily) (netip.Addr, bool) {
	for _, r := range p.rangesOf(f) {
		for {
			ip, ok := a.book.taken.lowestFree(r, p.AvoidBuggyIPs)
			if !ok {
				break
			}
			if !p.reserved[ip] {
				return ip, true
			}
			if ip == r.Last {
				break
			}
			r.First = ip.Next()
		}
	}
	return netip.Addr{}, false
}
