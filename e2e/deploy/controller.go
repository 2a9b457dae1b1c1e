package deploy

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// LeaseName is the controller's leader-election Lease (in Namespace).
const LeaseName = "herald-controller"

// Leader is the name of the controller Pod holding the Lease (its
// identity is the Pod name).
func (h *Herald) Leader(ctx context.Context) (string, error) {
	lease, err := h.Lab.Client().CoordinationV1().Leases(Namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("Lease %s/%s has no holder", Namespace, LeaseName)
	}
	return *lease.Spec.HolderIdentity, nil
}

// WaitLeader waits until a running controller Pod holds the Lease and
// returns its name.
func (h *Herald) WaitLeader(ctx context.Context, timeout time.Duration) (string, error) {
	var leader string
	err := labkit.Poll(ctx, timeout, "a running controller Pod holding the Lease", func() (bool, error) {
		name, err := h.Leader(ctx)
		if err != nil {
			return false, nil
		}
		pods, err := h.Pods(ctx, "controller")
		if err != nil {
			return false, nil
		}
		for _, p := range pods {
			if p.Name == name && running(&p, controllerContainer) != "" {
				leader = name
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("no running controller holds the Lease: %w", err)
	}
	return leader, nil
}

// ControllerMetrics scrapes the leading controller's metrics (from the
// client namespace: the root namespace has no route to pod addresses).
func (h *Herald) ControllerMetrics(ctx context.Context) (map[string]float64, error) {
	leader, err := h.WaitLeader(ctx, time.Minute)
	if err != nil {
		return nil, err
	}
	p, err := h.Lab.Client().CoreV1().Pods(Namespace).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil {
		return nil, fmt.Errorf("controller %s has no pod IP: %w", leader, err)
	}
	return h.Lab.ScrapeMetricsFrom(ctx, lab.Client, netip.AddrPortFrom(ip, 7472).String())
}
