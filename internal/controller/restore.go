package controller

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// restore records every assignment found in the status of Herald's
// Services (and of Services Herald wrote to that are no longer its own,
// until their status is cleared), oldest Service first, before anything new
// is allocated. When
// two Services claim one address, the older keeps it; the younger gets a
// Warning event and asks for a new address in its first sync (which its
// request may or may not allow).
func (c *Controller) restore() (restored, conflicts int) {
	all, _ := c.services.List(labels.Everything())
	var svcs []*corev1.Service
	for _, s := range all {
		// A Service that is not Herald's any more (--lb-class-only turned
		// on) but still shows Herald's addresses holds them until its
		// status is cleared: nobody else may get them meanwhile.
		if (c.opts.Class.IsOurs(s) || ownsFields(s, c.manager)) && len(service.IngressIPs(s)) > 0 {
			svcs = append(svcs, s)
		}
	}
	sort.Slice(svcs, func(i, j int) bool {
		ti, tj := svcs[i].CreationTimestamp.Time, svcs[j].CreationTimestamp.Time
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return cache.MetaObjectToName(svcs[i]).String() < cache.MetaObjectToName(svcs[j]).String()
	})
	var took adoption
	defer func() { c.logAdoption(took) }()
	for _, svc := range svcs {
		var nsLabels map[string]string
		if ns, err := c.namespaces.Get(svc.Namespace); err == nil {
			nsLabels = ns.Labels
		}
		req, reqErr := c.opts.Annotations.Request(svc, nsLabels) // an invalid request still keeps what it holds
		ips := service.IngressIPs(svc)
		if _, fromMetalLB := service.AssignedByMetalLB(svc); fromMetalLB {
			c.adopt(svc, req, reqErr, ips, &took)
			continue
		}
		// The annotation is a record its owner can edit: Restore counts
		// it only for addresses no pool contains or records as held
		// outside its ranges, and only when the pool it names has no
		// record at all (upgrade from a version without it).
		err := c.alloc.Restore(req, svc.Annotations[v1beta1.AnnotationAllocatedFromPool], ips)
		if err == nil {
			restored++
			continue
		}
		conflicts++
		c.log.Warn("address conflict at start", "service", req.Key, "ips", ipStrings(ips), "error", err)
		c.rec.Eventf(svc, corev1.EventTypeWarning, "AddressConflict",
			"%s is also claimed by an older Service (%s); a new address is allocated if the request allows it",
			strings.Join(ipStrings(ips), ", "), err.Error())
		c.mu.Lock()
		c.pending[cache.MetaObjectToName(svc)] = true
		c.mu.Unlock()
	}
	return restored, conflicts
}
