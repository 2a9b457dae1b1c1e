package controller

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/internal/allocator"
	"github.com/herald-lb/herald/internal/service"
)

// adoption counts what restore did with the addresses MetalLB wrote.
type adoption struct {
	adopted, refused int
}

// adopt takes over the addresses MetalLB's controller gave a Service (see
// service.AssignedByMetalLB) when they lie in one Herald pool that admits
// the Service, fit its request, and are held by no other Service, oldest
// Service first (restore's order) so that a conflict always goes the same
// way. An address that does not fit is not taken: the Service gets a
// Warning event and its first sync allocates as for a new Service.
func (c *Controller) adopt(svc *corev1.Service, req service.Request, reqErr error, ips []netip.Addr, tally *adoption) {
	metallbPool, _ := service.AssignedByMetalLB(svc)
	a, err := c.adoptable(req, reqErr, ips)
	if err == nil {
		tally.adopted++
		c.log.Info("adopted address from MetalLB", "service", req.Key, "ips", ipStrings(a.IPs), "pool", a.Pool, "metallbPool", metallbPool)
		where := "as part of IPAddressPool " + a.Pool
		if a.Pool == "" {
			where = "outside every IPAddressPool"
		}
		if reqErr != nil {
			where += "; its request is invalid, so it keeps what it holds until the request is fixed"
		}
		c.rec.Eventf(svc, corev1.EventTypeNormal, "AdoptedFromMetalLB", "Herald took over %s, assigned by MetalLB%s, %s",
			strings.Join(ipStrings(a.IPs), ", "), metallbPoolWords(metallbPool), where)
		return
	}
	tally.refused++
	c.log.Warn("address from MetalLB not adopted", "service", req.Key, "ips", ipStrings(ips), "metallbPool", metallbPool, "error", err)
	c.rec.Eventf(svc, corev1.EventTypeWarning, "NotAdoptedFromMetalLB",
		"%s, assigned by MetalLB%s, cannot be kept: %s; a new address is allocated if the request allows it",
		strings.Join(ipStrings(ips), ", "), metallbPoolWords(metallbPool), err.Error())
	c.mu.Lock()
	c.pending[cache.MetaObjectToName(svc)] = true
	c.mu.Unlock()
}

// adoptable asks the allocator for exactly the addresses MetalLB gave, as
// if the Service had requested them: the allocator then checks the pool,
// its admission rules, the families and every other holder. A Service
// whose request cannot be parsed keeps what it holds, as restore does
// (its sync then reports the request error).
func (c *Controller) adoptable(req service.Request, reqErr error, ips []netip.Addr) (allocator.Assignment, error) {
	if reqErr != nil {
		if err := c.alloc.Restore(req, "", ips); err != nil {
			return allocator.Assignment{}, err
		}
		a, _ := c.alloc.Lookup(req.Key)
		return a, nil
	}
	if len(req.RequestedIPs) > 0 && !sameIPSet(req.RequestedIPs, ips) {
		return allocator.Assignment{}, fmt.Errorf("the Service requests %s", strings.Join(ipStrings(req.RequestedIPs), ", "))
	}
	probe := req
	probe.RequestedIPs = ips
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alloc.Assign(probe)
}

// logAdoption is the line at the end of the takeover.
func (c *Controller) logAdoption(t adoption) {
	if t.adopted+t.refused > 0 {
		c.log.Info("took over addresses assigned by MetalLB", "adopted", t.adopted, "notAdopted", t.refused)
	}
}

func metallbPoolWords(pool string) string {
	if pool == "" {
		return ""
	}
	return " from its pool " + pool
}

func sameIPSet(a, b []netip.Addr) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, func(p, q netip.Addr) int { return p.Compare(q) })
	slices.SortFunc(y, func(p, q netip.Addr) int { return p.Compare(q) })
	return slices.Equal(x, y)
}

// metallbNotices remembers, per Service, which MetalLB annotations it was
// last told about, so that the Normal event recommending Herald's names is
// sent once per change and not on every sync. A Service is forgotten when
// it no longer reads MetalLB annotations, is deleted or is no longer
// Herald's, so the memory follows the Services there are, not their
// churn. The zero value is ready.
type metallbNotices struct {
	mu   sync.Mutex
	seen map[cache.ObjectName]string
}

// note records the Service's signature ("" forgets it) and reports
// whether it changed.
func (n *metallbNotices) note(key cache.ObjectName, sig string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := n.seen[key] != sig
	if sig == "" {
		delete(n.seen, key)
		return changed
	}
	if n.seen == nil {
		n.seen = map[cache.ObjectName]string{}
	}
	n.seen[key] = sig
	return changed
}

// forget drops a Service's notice.
func (n *metallbNotices) forget(key cache.ObjectName) { n.note(key, "") }

// len is how many Services have a notice.
func (n *metallbNotices) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.seen)
}

// noticeMetalLBAnnotations sends a Normal event when the Service's request
// is read from MetalLB annotations (Herald's names absent).
func (c *Controller) noticeMetalLBAnnotations(svc *corev1.Service) {
	used := c.opts.Annotations.MetalLBInUse(svc)
	parts := make([]string, len(used))
	for i, t := range used {
		parts[i] = fmt.Sprintf("%s as %s", t.MetalLB, t.Herald)
	}
	sig := strings.Join(parts, ", ")
	if c.notices.note(cache.MetaObjectToName(svc), sig) && sig != "" {
		c.rec.Eventf(svc, corev1.EventTypeNormal, "MetalLBAnnotation",
			"Reading %s; rename to the herald.dev/ annotations (MetalLB's names are read only while Herald's are absent)", sig)
	}
}
