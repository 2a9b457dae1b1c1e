package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
)

// A Service's status is written with a strategic merge patch, as the
// Kubernetes service controller writes it, not with server-side apply: the
// API server parses an apply request's body as YAML, and with Herald's two
// conditions that cost it about a third more CPU per write than a patch
// (docs/operations.md, Performance). The patch names only what Herald
// writes: status.loadBalancer.ingress (an atomic list, replaced whole) and
// Herald's conditions (merged by type, so other controllers' conditions
// stay). metadata.resourceVersion makes it conditional on the version the
// decision read: a write based on a stale view fails with a conflict.

// statusPatch is the body of the patch.
type statusPatch struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		// LoadBalancer, when set, replaces the ingress list; a nil
		// Ingress removes it.
		LoadBalancer *ingressPatch `json:"loadBalancer,omitempty"`
		// Conditions are metav1.Condition values to set and
		// conditionDelete directives.
		Conditions []any `json:"conditions,omitempty"`
	} `json:"status"`
}

type ingressPatch struct {
	Ingress []corev1.LoadBalancerIngress `json:"ingress"`
}

// conditionDelete removes the condition of this type.
type conditionDelete struct {
	Patch string `json:"$patch"`
	Type  string `json:"type"`
}

func newStatusPatch(resourceVersion string) *statusPatch {
	p := &statusPatch{}
	p.Metadata.ResourceVersion = resourceVersion
	return p
}

// empty reports whether the patch would change nothing.
func (p *statusPatch) empty() bool {
	return p.Status.LoadBalancer == nil && len(p.Status.Conditions) == 0
}

// setIngress replaces the ingress list; nil removes it.
func (p *statusPatch) setIngress(in []corev1.LoadBalancerIngress) {
	p.Status.LoadBalancer = &ingressPatch{Ingress: in}
}

// setConditions sets these conditions.
func (p *statusPatch) setConditions(conds []metav1.Condition) {
	for _, c := range conds {
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
}

// removeHeraldConditions removes every condition of Herald's (type
// herald.dev/...) that the Service has.
func (p *statusPatch) removeHeraldConditions(existing []metav1.Condition) {
	for _, c := range existing {
		if isHeraldCondition(c.Type) {
			p.Status.Conditions = append(p.Status.Conditions, conditionDelete{Patch: "delete", Type: c.Type})
		}
	}
}

func isHeraldCondition(typ string) bool { return strings.HasPrefix(typ, v1beta1.GroupName+"/") }

// patchStatus sends the patch under the write fence and returns the
// Service as written.
func (c *Controller) patchStatus(ctx context.Context, svc *corev1.Service, p *statusPatch) (*corev1.Service, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s status patch: %w", svc.Namespace, svc.Name, err)
	}
	wctx, cancel, err := c.writeCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return c.kube.CoreV1().Services(svc.Namespace).Patch(wctx, svc.Name, types.StrategicMergePatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
}

// wroteIngress reports whether Herald's field manager owns the Service's
// status.loadBalancer.ingress: Herald then removes it when it has no
// address to show, and leaves alone an ingress another implementation
// wrote (MetalLB's, during a migration). Herald's status writes were
// server-side applies before 2026-12-06 (operation Apply) and are patches
// since (operation Update); both count.
func wroteIngress(svc *corev1.Service) bool {
	for _, mf := range svc.ManagedFields {
		if mf.Manager == FieldManager && mf.Subresource == "status" && mf.FieldsV1 != nil &&
			strings.Contains(string(mf.FieldsV1.Raw), `"f:ingress"`) {
			return true
		}
	}
	return false
}
