package speaker

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/internal/announce"
)

// serviceCache keeps Herald's Services converted for announce
// (announce.Service, endpoints summarised), sorted by key, and converts
// again only the Services whose object or EndpointSlices changed since the
// last reconcile (the informers' handlers mark them): a reconcile at
// 10,000 Services does not convert 10,000. A conversion that differs from
// the Service's last gets a new Rev, so that announce.L2Memo decides again
// only the addresses of those Services; an update that changes nothing
// announcing reads keeps the Rev it had.
type serviceCache struct {
	mu     sync.Mutex
	dirty  map[string]bool
	all    bool               // convert every Service (the first time)
	sorted []announce.Service // by Key
	rev    uint64             // the last Rev given

	// byIP lists the keys of the Services holding each address (sorted,
	// once per occurrence in a Service's IPs), so that a reconcile finds
	// the holders of the addresses that changed without grouping every
	// Service; changed collects the addresses whose holders or holders'
	// conversions changed since takeChanges, everything that every
	// Service was converted (the first time).
	byIP       map[netip.Addr][]string
	changed    map[netip.Addr]bool
	changedSvc map[string]bool // Services with a new Rev, created or removed
	everything bool
}

func newServiceCache() *serviceCache {
	return &serviceCache{dirty: map[string]bool{}, all: true, byIP: map[netip.Addr][]string{},
		changed: map[netip.Addr]bool{}, changedSvc: map[string]bool{}}
}

// serviceChanges are the addresses whose Services changed and the
// Services whose conversion changed (a new Rev, created or removed)
// between two takeChanges, sorted; everything: any may have.
type serviceChanges struct {
	ips        []netip.Addr
	keys       []string
	everything bool
}

// asChanges is the change set the memos take.
func (c serviceChanges) asChanges() announce.Changes {
	return announce.Changes{All: c.everything, IPs: c.ips, Keys: c.keys}
}

// takeChanges returns the changes since the last call and forgets them.
func (c *serviceCache) takeChanges() serviceChanges {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := serviceChanges{ips: slices.SortedFunc(maps.Keys(c.changed), netip.Addr.Compare),
		keys: slices.Sorted(maps.Keys(c.changedSvc)), everything: c.everything}
	clear(c.changed)
	clear(c.changedSvc)
	c.everything = false
	return out
}

// holdersIn returns the Services of svcs (what the last services call
// returned) holding an address, sorted by key, as announce groups them.
func (c *serviceCache) holdersIn(svcs []announce.Service) func(netip.Addr) []*announce.Service {
	return func(ip netip.Addr) []*announce.Service {
		c.mu.Lock()
		keys := c.byIP[ip]
		c.mu.Unlock()
		out := make([]*announce.Service, 0, len(keys))
		for _, k := range keys {
			if i, ok := slices.BinarySearchFunc(svcs, k, byKey); ok {
				out = append(out, &svcs[i])
			}
		}
		return out
	}
}

func byKey(s announce.Service, k string) int { return strings.Compare(s.Key, k) }

// index adds (add) or removes a Service's addresses in byIP and notes
// them as changed.
func (c *serviceCache) index(s announce.Service, add bool) {
	for _, ip := range s.IPs {
		keys := c.byIP[ip]
		i, _ := slices.BinarySearch(keys, s.Key)
		switch {
		case add:
			keys = slices.Insert(keys, i, s.Key)
		case i < len(keys) && keys[i] == s.Key:
			keys = slices.Delete(keys, i, i+1)
		}
		if len(keys) == 0 {
			delete(c.byIP, ip)
		} else {
			c.byIP[ip] = keys
		}
		c.changed[ip] = true
	}
}

// touch marks a Service (namespace/name) to convert again.
func (c *serviceCache) touch(key string) {
	c.mu.Lock()
	c.dirty[key] = true
	c.mu.Unlock()
}

// touchObject marks the Service an informer object (a Service, an
// EndpointSlice, or a tombstone of either) belongs to.
func (c *serviceCache) touchObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *corev1.Service:
		c.touch(o.Namespace + "/" + o.Name)
	case *discoveryv1.EndpointSlice:
		if name := o.Labels[discoveryv1.LabelServiceName]; name != "" {
			c.touch(o.Namespace + "/" + name)
		}
	}
}

// serviceSource is where the cache reads Services from: the lister, the
// class filter, and a Service's EndpointSlices.
type serviceSource struct {
	list     func() ([]*corev1.Service, error)
	get      func(namespace, name string) (*corev1.Service, error)
	ours     func(*corev1.Service) bool
	slicesOf func(*corev1.Service) []*discoveryv1.EndpointSlice
}

// services converts what changed and returns every Service of Herald's
// class, sorted by key. The slice is the cache's own, valid until the
// next call, which may change it in place: the reconcile, the only
// caller (one at a time, Speaker.reconcileMu), reads it and keeps nothing
// of it (copying 10,000 Services at every reconcile cost more than the
// rest of an incremental one).
func (c *serviceCache) services(src serviceSource) ([]announce.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all {
		svcs, err := src.list()
		if err != nil {
			return nil, err
		}
		c.sorted = announce.ServicesFrom(svcs, src.ours, src.slicesOf)
		clear(c.byIP)
		for i := range c.sorted {
			c.sorted[i].Rev = c.nextRev()
			c.index(c.sorted[i], true)
		}
		clear(c.changed)
		clear(c.changedSvc)
		c.everything = true
		c.all, c.dirty = false, map[string]bool{}
		return c.sorted, nil
	}
	for key := range c.dirty {
		ns, name, _ := strings.Cut(key, "/")
		svc, err := src.get(ns, name)
		switch {
		case apierrors.IsNotFound(err):
			svc = nil
		case err != nil:
			return nil, err
		}
		if svc != nil && !src.ours(svc) {
			svc = nil
		}
		c.put(key, svc, src)
		delete(c.dirty, key)
	}
	return c.sorted, nil
}

// put stores the conversion of svc under key, or removes key (svc nil).
func (c *serviceCache) put(key string, svc *corev1.Service, src serviceSource) {
	i, found := slices.BinarySearchFunc(c.sorted, key, byKey)
	if svc == nil {
		if found {
			c.index(c.sorted[i], false)
			c.sorted = slices.Delete(c.sorted, i, i+1)
			c.changedSvc[key] = true
		}
		return
	}
	next := announce.ServiceFrom(svc, src.slicesOf(svc))
	if found && sameConversion(c.sorted[i], next) {
		return // keeps its Rev: nothing announcing reads changed, nothing to decide again
	}
	next.Rev = c.nextRev()
	c.changedSvc[key] = true
	if found {
		c.index(c.sorted[i], false)
		c.sorted[i] = next
	} else {
		c.sorted = slices.Insert(c.sorted, i, next)
	}
	c.index(next, true)
}

// sameConversion reports whether two conversions of a Service are equal
// but for their Rev: an update announcing does not read (a pod replaced
// on the same node, an annotation, a port) then decides nothing again.
func sameConversion(a, b announce.Service) bool {
	a.Rev, b.Rev = 0, 0
	return reflect.DeepEqual(a, b)
}

func (c *serviceCache) nextRev() uint64 {
	c.rev++
	return c.rev
}
