package controller

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	acorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
)

// applyOpts are the options of the controller's server-side applies,
// under its installation's field manager.
func (c *Controller) applyOpts() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: c.manager, Force: true}
}

// publish writes what changed in the status (ingress with ipMode VIP,
// Herald's conditions), with events telling the story, and queues the pool
// annotation.
func (c *Controller) publish(ctx context.Context, svc *corev1.Service, out outcome) error {
	ingress := wantIngress(out)
	conds := []condition{allocatedCondition(out)}
	var ips []netip.Addr
	if out.held {
		ips = out.assignment.IPs
	}
	announced, hasAnnounced := c.announcedCondition(svc, out.cfg, ips)
	if hasAnnounced {
		conds = append(conds, announced)
	}
	ingressChanged := !sameIngress(svc.Status.LoadBalancer.Ingress, ingress)
	condsChanged := !sameConditions(svc.Status.Conditions, conds, svc.Generation)
	if ingressChanged && len(ingress) > 0 {
		c.rec.Event(svc, corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer")
	}
	if ingressChanged || condsChanged {
		if err := c.applyStatus(ctx, svc, ingress, conds); err != nil {
			return err
		}
	}
	if ingressChanged && len(ingress) > 0 {
		c.rec.Eventf(svc, corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer: %s%s from IPAddressPool %s",
			countWords(out.assignment.IPs), strings.Join(ipStrings(out.assignment.IPs), ", "), out.assignment.Pool)
	}
	if ingressChanged && len(ingress) > 0 && out.assignment.Refused != "" {
		c.rec.Eventf(svc, corev1.EventTypeWarning, "SharingRefused", "Not sharing an address under %s: %s; the Service got %s instead",
			v1beta1.AnnotationAllowSharedIP, out.assignment.Refused, strings.Join(ipStrings(out.assignment.IPs), ", "))
	}
	if out.err != nil {
		c.rec.Eventf(svc, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %s: %s", failureReason(out.err), out.err.Error())
	}
	if hasAnnounced {
		c.announcementEvents(svc, announced)
	} else {
		c.announced.ForgetTrue(cache.MetaObjectToName(svc))
	}
	c.metrics.sharedLocalIncomplete.note(cache.MetaObjectToName(svc), hasAnnounced && announced.Reason == announce.ReasonSharedLocalIncomplete)
	if len(out.outside) > 0 && condsChanged {
		c.rec.Eventf(svc, corev1.EventTypeWarning, "AddressOutsidePool", "%s is in no IPAddressPool any more; the Service keeps it", strings.Join(ipStrings(out.outside), ", "))
	}
	if svc.Annotations[v1beta1.AnnotationAllocatedFromPool] != poolAnnotation(out) {
		c.annotationQueue.Add(cache.MetaObjectToName(svc))
	}
	return nil
}

// announcementEvents tells the story of who may announce the Service:
// Warning UnAvailableLoadBalancer when nobody may, Warning
// SharedLocalIncomplete when it starts sharing an address with Local
// Services no node serves in full, UpdatedLoadBalancer when the
// announcing nodes change. A change of owner usually passes through
// Unknown (the new owner has not reported the address yet), so the change
// is measured against the last True condition, not the one just before.
func (c *Controller) announcementEvents(svc *corev1.Service, now condition) {
	prev := findCondition(svc.Status.Conditions, v1beta1.ConditionAnnounced)
	changed := c.announced.NoteTrue(cache.MetaObjectToName(svc), prev, now.status(), now.Message)
	if prev != nil && prev.Status == now.status() && prev.Message == now.Message {
		return
	}
	switch {
	case now.Reason == announce.ReasonSharedLocalIncomplete && (prev == nil || prev.Reason != now.Reason):
		c.rec.Eventf(svc, corev1.EventTypeWarning, now.Reason, "%s", now.Message)
	case !now.Status && now.Reason == announce.ReasonNoEligibleNode:
		c.rec.Eventf(svc, corev1.EventTypeWarning, "UnAvailableLoadBalancer", "No node may announce the load balancer: %s", now.Message)
	case !now.Status && now.Reason == v1beta1.ReasonOwnerSpeakerDown:
		c.rec.Eventf(svc, corev1.EventTypeWarning, now.Reason, "%s", now.Message)
	case !now.Status && now.Reason == announce.ReasonNoAdvertisement:
		c.rec.Eventf(svc, corev1.EventTypeWarning, now.Reason, "%s", now.Message)
	case now.Status && changed:
		c.rec.Eventf(svc, corev1.EventTypeNormal, "UpdatedLoadBalancer", "Announcing nodes changed: %s", now.Message)
	}
}

// poolAnnotation is the value herald.dev/ip-allocated-from-pool should have.
func poolAnnotation(out outcome) string {
	if out.held {
		return out.assignment.Pool
	}
	return ""
}

// syncAnnotation writes herald.dev/ip-allocated-from-pool after the status.
// It runs in its own queue and waits while Services are waiting for their
// addresses: with 1,000 pending Services, addresses come first.
func (c *Controller) syncAnnotation(ctx context.Context, key cache.ObjectName) error {
	for {
		idle := c.servicesIdle.wait()
		if c.serviceQueue.Len() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
		}
	}
	svc, err := c.services.Services(key.Namespace).Get(key.Name)
	if err != nil || !c.opts.Class.IsOurs(svc) {
		return nil // deleted or not ours: nothing to annotate
	}
	c.mu.Lock()
	a, held := c.alloc.Lookup(key.String())
	c.mu.Unlock()
	return c.applyPoolAnnotation(ctx, svc, outcome{assignment: a, held: held})
}

func wantIngress(out outcome) []corev1.LoadBalancerIngress {
	if !out.held {
		return nil
	}
	vip := corev1.LoadBalancerIPModeVIP
	in := make([]corev1.LoadBalancerIngress, 0, len(out.assignment.IPs))
	for _, ip := range out.assignment.IPs {
		in = append(in, corev1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
	}
	return in
}

func sameIngress(have, want []corev1.LoadBalancerIngress) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i].IP != want[i].IP || have[i].Hostname != "" || have[i].IPMode == nil || *have[i].IPMode != *want[i].IPMode || len(have[i].Ports) > 0 {
			return false
		}
	}
	return true
}

func (c *Controller) applyStatus(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress, conds []condition) error {
	p := &statusChange{}
	p.setConditions(desiredConditions(svc.Status.Conditions, conds, svc.Generation, time.Now()))
	switch {
	case len(ingress) > 0:
		p.replaceIngress(ingress)
	case len(svc.Status.LoadBalancer.Ingress) > 0 && wroteIngress(svc, c.manager):
		p.replaceIngress(nil)
	}
	start := time.Now()
	if _, err := c.updateStatus(ctx, svc, p); err != nil {
		return fmt.Errorf("service %s/%s status: %w", svc.Namespace, svc.Name, err)
	}
	c.firstStatus.Do(func() {
		c.log.Info("first status written", "service", svc.Namespace+"/"+svc.Name, "request", time.Since(start).Round(time.Millisecond),
			"sinceCachesSynced", time.Since(c.syncedAt).Round(time.Millisecond))
	})
	return nil
}

// applyPoolAnnotation keeps herald.dev/ip-allocated-from-pool in step.
func (c *Controller) applyPoolAnnotation(ctx context.Context, svc *corev1.Service, out outcome) error {
	want := poolAnnotation(out)
	if svc.Annotations[v1beta1.AnnotationAllocatedFromPool] == want {
		return nil
	}
	ac := acorev1.Service(svc.Name, svc.Namespace).WithResourceVersion(svc.ResourceVersion)
	if want != "" {
		ac.WithAnnotations(map[string]string{v1beta1.AnnotationAllocatedFromPool: want})
	}
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := c.kube.CoreV1().Services(svc.Namespace).Apply(wctx, ac, c.applyOpts()); err != nil {
		return fmt.Errorf("service %s/%s annotation: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// forget handles a Service that is not Herald's (any more): its Herald
// status, annotation and conditions are removed, then its addresses are
// released. A Service Herald never wrote to is never written to.
func (c *Controller) forget(ctx context.Context, svc *corev1.Service) error {
	key := cache.MetaObjectToName(svc)
	c.mu.Lock()
	a, held := c.alloc.Lookup(key.String())
	delete(c.pending, key)
	c.mu.Unlock()
	c.announced.ForgetTrue(key)
	c.metrics.sharedLocalIncomplete.note(key, false)
	if !held && !ownsFields(svc, c.manager) {
		return nil
	}
	rv := svc.ResourceVersion
	p := &statusChange{}
	p.removeHeraldConditions(svc.Status.Conditions)
	if len(svc.Status.LoadBalancer.Ingress) > 0 && (held || wroteIngress(svc, c.manager)) {
		p.replaceIngress(nil)
	}
	if !p.empty() {
		cleared, err := c.updateStatus(ctx, svc, p)
		if err != nil {
			return fmt.Errorf("service %s status cleanup: %w", key, err)
		}
		rv = cleared.ResourceVersion
	}
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := c.kube.CoreV1().Services(svc.Namespace).Apply(wctx, acorev1.Service(svc.Name, svc.Namespace).WithResourceVersion(rv), c.applyOpts()); err != nil {
		return fmt.Errorf("service %s annotation cleanup: %w", key, err)
	}
	if !held {
		return nil
	}
	c.mu.Lock()
	c.alloc.Release(key.String())
	c.alloc.Quarantine(a.IPs) // in the same critical section: nobody gets them in between
	moved := c.moved[key]
	delete(c.moved, key)
	c.mu.Unlock()
	c.holdBack(moved)
	c.holdBack(a.IPs)
	c.log.Info("released", "service", key.String(), "ips", ipStrings(a.IPs), "pool", a.Pool, "reason", "no longer a Herald LoadBalancer")
	c.rec.Eventf(svc, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer: released %s (the Service is no longer a Herald LoadBalancer)", strings.Join(ipStrings(a.IPs), ", "))
	c.poolQueue.AddAfter(a.Pool, time.Second)
	c.requeuePending()
	return nil
}

// ownsFields reports whether Herald's field manager (this installation's,
// manager) wrote to the object.
func ownsFields(svc *corev1.Service, manager string) bool {
	for _, mf := range svc.ManagedFields {
		if mf.Manager == manager {
			return true
		}
	}
	return false
}
