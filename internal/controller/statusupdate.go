package controller

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// A Service's status is written with an update of its status subresource
// (PUT), not with server-side apply nor a patch: the API server parses an
// apply body as YAML, and merges a patch into the stored object, and with
// Herald's two conditions that cost it more CPU per write than storing the
// whole status it is sent (measured: 1,000 pending Services are assigned
// in less time with updates than with patches, docs/benchmarks.md and
// docs/decisions/). The status sent
// is the one the decision read, with only what Herald writes changed:
// status.loadBalancer.ingress (replaced whole) and Herald's conditions
// (set or removed by type; other controllers' conditions stay as read).
// The update carries the resourceVersion the decision read, so a write
// based on a stale view fails with a conflict, as the patch did; the API
// server takes nothing but the status from a status update.

// statusChange is what Herald changes in a Service's status.
type statusChange struct {
	// ingress, when setIngress is true, replaces the ingress list; nil
	// removes it.
	ingress    []corev1.LoadBalancerIngress
	setIngress bool
	// set are conditions to set (replacing one of the same type), remove
	// the types of conditions to remove.
	set    []metav1.Condition
	remove []string
}

// empty reports whether the change would change nothing.
func (p *statusChange) empty() bool {
	return !p.setIngress && len(p.set) == 0 && len(p.remove) == 0
}

// replaceIngress replaces the ingress list; nil removes it.
func (p *statusChange) replaceIngress(in []corev1.LoadBalancerIngress) {
	p.ingress, p.setIngress = in, true
}

// setConditions sets these conditions.
func (p *statusChange) setConditions(conds []metav1.Condition) {
	p.set = append(p.set, conds...)
}

// removeHeraldConditions removes every condition of Herald's (type
// herald.dev/...) that the Service has.
func (p *statusChange) removeHeraldConditions(existing []metav1.Condition) {
	for _, c := range existing {
		if isHeraldCondition(c.Type) {
			p.remove = append(p.remove, c.Type)
		}
	}
}

func isHeraldCondition(typ string) bool { return strings.HasPrefix(typ, v1beta1.GroupName+"/") }

// applyTo makes the change on svc (a copy of the Service as read, whose
// resourceVersion the update carries).
func (p *statusChange) applyTo(svc *corev1.Service) {
	if p.setIngress {
		svc.Status.LoadBalancer.Ingress = p.ingress
	}
	for _, c := range p.set {
		if e := findCondition(svc.Status.Conditions, c.Type); e != nil {
			*e = c
		} else {
			svc.Status.Conditions = append(svc.Status.Conditions, c)
		}
	}
	svc.Status.Conditions = slices.DeleteFunc(svc.Status.Conditions, func(c metav1.Condition) bool { return slices.Contains(p.remove, c.Type) })
}

// updateStatus writes the status of svc, as read, with change p under the
// write fence and returns the Service as written. The managed fields are left out of the update,
// so the API server keeps its own and only records what this write
// changed as Herald's.
func (c *Controller) updateStatus(ctx context.Context, svc *corev1.Service, p *statusChange) (*corev1.Service, error) {
	s := svc.DeepCopy()
	s.ManagedFields = nil
	p.applyTo(s)
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return c.kube.CoreV1().Services(svc.Namespace).UpdateStatus(wctx, s, metav1.UpdateOptions{FieldManager: c.manager})
}

// wroteIngress reports whether Herald's field manager owns the Service's
// status.loadBalancer.ingress: Herald then removes it when it has no
// address to show, and leaves alone an ingress another implementation
// wrote (MetalLB's, during a migration). Earlier versions of Herald wrote
// status with server-side apply (operation Apply), then with patches;
// it now updates it (operation Update, as for patches). All count, so an
// address written by an older controller is still recognised as Herald's.
func wroteIngress(svc *corev1.Service, manager string) bool {
	for _, mf := range svc.ManagedFields {
		if mf.Manager == manager && mf.Subresource == "status" && mf.FieldsV1 != nil &&
			strings.Contains(mf.FieldsV1.GetRawString(), `"f:ingress"`) {
			return true
		}
	}
	return false
}
