package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/allocator"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/service"
)

// outcome is what one sync decided for a Service.
type outcome struct {
	assignment allocator.Assignment
	held       bool
	err        error // why the request is not (fully) met; nil when it is
	outside    []netip.Addr
	cfg        *config.Config // the snapshot the decision used
}

func (c *Controller) syncService(ctx context.Context, key cache.ObjectName) error {
	start := time.Now()
	defer func() { c.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	svc, err := c.services.Services(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.announced.DependOn(key, nil)
		c.notices.forget(key)
		c.releaseDeleted(key)
		return nil
	}
	if err != nil {
		return err
	}
	if !c.opts.Class.IsOurs(svc) {
		c.notices.forget(key)
		return c.forget(ctx, svc)
	}
	c.noticeMetalLBAnnotations(svc)
	out := c.decide(svc)
	c.requeueDisplaced(key, out.assignment.Displaced)
	if err := c.publish(ctx, svc, out); err != nil {
		return err // the moved addresses stay quarantined until a write succeeds
	}
	c.releaseMoved(key)
	c.mu.Lock()
	if out.err != nil {
		c.pending[key] = true
	} else {
		delete(c.pending, key)
	}
	c.mu.Unlock()
	var re *service.RequestError
	if out.err != nil && !errors.As(out.err, &re) {
		return reported{out.err} // retried with backoff; pending Services are also requeued when something could help
	}
	return nil
}

// decide asks the allocator for the Service's addresses. When the request
// cannot be met, the Service keeps whatever it already holds.
func (c *Controller) decide(svc *corev1.Service) outcome {
	key := cache.MetaObjectToName(svc).String()
	var nsLabels map[string]string
	if ns, err := c.namespaces.Get(svc.Namespace); err == nil {
		nsLabels = ns.Labels
	}
	req, reqErr := c.opts.Annotations.Request(svc, nsLabels)
	c.mu.Lock()
	defer c.mu.Unlock()
	before, heldBefore := c.alloc.Lookup(key)
	var out outcome
	if reqErr != nil {
		out.err = reqErr
		out.assignment, out.held = before, heldBefore
	} else if a, err := c.alloc.Assign(req); err != nil {
		out.err = err
		out.assignment, out.held = c.alloc.Lookup(key)
	} else {
		out.assignment, out.held = a, true
	}
	out.cfg = c.cfg
	if heldBefore {
		c.quarantineMoved(cache.MetaObjectToName(svc), dropped(before.IPs, out.assignment.IPs))
	}
	if out.held {
		out.outside = outsidePools(c.cfg, out.assignment.IPs)
	}
	c.recordDecision(key, before, heldBefore, out)
	return out
}

// recordDecision logs and counts what changed.
func (c *Controller) recordDecision(key string, before allocator.Assignment, heldBefore bool, out outcome) {
	switch {
	case out.err != nil:
		reason := failureReason(out.err)
		c.metrics.failures.WithLabelValues(reason).Inc()
		c.log.Info("allocation failed", "service", key, "reason", reason, "message", out.err.Error(), "keeps", ipStrings(out.assignment.IPs))
	case !heldBefore || !sameIPs(before.IPs, out.assignment.IPs):
		c.metrics.allocations.Inc()
		c.log.Info("assigned", "service", key, "ips", ipStrings(out.assignment.IPs), "addressCount", len(out.assignment.IPs),
			"pool", out.assignment.Pool, "previous", ipStrings(before.IPs))
		if heldBefore {
			c.poolQueue.AddAfter(before.Pool, time.Second)
		}
		c.poolQueue.AddAfter(out.assignment.Pool, time.Second)
	}
}

// requeueDisplaced syncs the Services that joined an address after key
// and clash with it since key's change: they move, key stays.
func (c *Controller) requeueDisplaced(key cache.ObjectName, displaced []string) {
	for _, d := range displaced {
		name, err := cache.ParseObjectName(d)
		if err != nil {
			continue
		}
		c.log.Info("shared address keeps its first holder", "service", key.String(), "moves", d)
		c.serviceQueue.Add(name)
	}
}

// outsidePools returns the addresses no configured pool contains.
func outsidePools(cfg *config.Config, ips []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if _, ok := cfg.PoolFor(ip); !ok {
			out = append(out, ip)
		}
	}
	return out
}

// failureReason is the condition reason of a failed request.
func failureReason(err error) string {
	var re *service.RequestError
	if errors.As(err, &re) {
		return string(allocator.InvalidRequest)
	}
	if r := allocator.ReasonOf(err); r != "" {
		return string(r)
	}
	return "AllocationFailed"
}

// allocatedCondition says whether the Service got what it asked for.
func allocatedCondition(out outcome) condition {
	cond := condition{Type: v1beta1.ConditionAllocated}
	switch {
	case out.err != nil:
		cond.Reason, cond.Message = failureReason(out.err), out.err.Error()
		if out.held {
			cond.Message += fmt.Sprintf("; the Service keeps %s until the request can be met", strings.Join(ipStrings(out.assignment.IPs), ", "))
		}
	case len(out.outside) > 0:
		cond.Status, cond.Reason = true, "AddressOutsidePool"
		cond.Message = fmt.Sprintf("%s is in no IPAddressPool any more (the pool shrank, changed or was deleted); the Service keeps it", strings.Join(ipStrings(out.outside), ", "))
	default:
		cond.Status, cond.Reason = true, "Allocated"
		cond.Message = fmt.Sprintf("%s%s from IPAddressPool %s", countWords(out.assignment.IPs), strings.Join(ipStrings(out.assignment.IPs), ", "), out.assignment.Pool)
	}
	return cond
}

// releaseDeleted frees the addresses of a deleted Service.
func (c *Controller) releaseDeleted(key cache.ObjectName) {
	c.mu.Lock()
	a, held := c.alloc.Lookup(key.String())
	if held {
		c.alloc.Release(key.String())
		c.alloc.Quarantine(a.IPs) // in the same critical section: nobody gets them in between
	}
	tomb := c.tombstones[key]
	delete(c.tombstones, key)
	delete(c.pending, key)
	moved := c.moved[key]
	delete(c.moved, key)
	c.mu.Unlock()
	c.announced.ForgetTrue(key)
	c.metrics.sharedLocalIncomplete.note(key, false)
	c.holdBack(moved)
	if !held {
		return
	}
	c.holdBack(a.IPs)
	c.log.Info("released", "service", key.String(), "ips", ipStrings(a.IPs), "pool", a.Pool, "reason", "deleted")
	if tomb != nil {
		c.rec.Eventf(tomb, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer: released %s", strings.Join(ipStrings(a.IPs), ", "))
	}
	c.poolQueue.AddAfter(a.Pool, time.Second)
	c.requeuePending()
}

// countWords says how many addresses a Service holds when it holds
// several of a family (herald.dev/address-count), as a prefix of the
// list: "3 addresses per family, 6 in all: "; "" otherwise.
func countWords(ips []netip.Addr) string {
	if len(ips) == 0 {
		return ""
	}
	perFamily := 0
	for _, ip := range ips {
		if ip.Is4() == ips[0].Is4() {
			perFamily++
		}
	}
	switch {
	case perFamily <= 1:
		return ""
	case perFamily == len(ips):
		return fmt.Sprintf("%d addresses: ", perFamily)
	}
	return fmt.Sprintf("%d addresses per family, %d in all: ", perFamily, len(ips))
}

func ipStrings(ips []netip.Addr) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func sameIPs(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
