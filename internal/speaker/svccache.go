package speaker

import (
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
}

func newServiceCache() *serviceCache {
	return &serviceCache{dirty: map[string]bool{}, all: true}
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
// class, sorted by key (a copy the caller may keep).
func (c *serviceCache) services(src serviceSource) ([]announce.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all {
		svcs, err := src.list()
		if err != nil {
			return nil, err
		}
		c.sorted = announce.ServicesFrom(svcs, src.ours, src.slicesOf)
		for i := range c.sorted {
			c.sorted[i].Rev = c.nextRev()
		}
		c.all, c.dirty = false, map[string]bool{}
		return slices.Clone(c.sorted), nil
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
	return slices.Clone(c.sorted), nil
}

// put stores the conversion of svc under key, or removes key (svc nil).
func (c *serviceCache) put(key string, svc *corev1.Service, src serviceSource) {
	i, found := slices.BinarySearchFunc(c.sorted, key, func(s announce.Service, k string) int { return strings.Compare(s.Key, k) })
	switch {
	case svc == nil && found:
		c.sorted = slices.Delete(c.sorted, i, i+1)
	case svc == nil:
	case found:
		next := announce.ServiceFrom(svc, src.slicesOf(svc))
		if sameConversion(c.sorted[i], next) {
			return // keeps its Rev: nothing announcing reads changed, nothing to decide again
		}
		next.Rev = c.nextRev()
		c.sorted[i] = next
	default:
		c.sorted = slices.Insert(c.sorted, i, c.convert(svc, src))
	}
}

func (c *serviceCache) convert(svc *corev1.Service, src serviceSource) announce.Service {
	out := announce.ServiceFrom(svc, src.slicesOf(svc))
	out.Rev = c.nextRev()
	return out
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
