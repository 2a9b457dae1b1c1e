package controller_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
)

// TestOutsideAddressRecordedAndRestoredToItsPool: a pool shrunk under a
// Service lists the address in status.addressesOutsideRanges, and a
// restarted controller restores the address to that pool although the
// Service's owner edited its pool annotation to another pool meanwhile.
func TestOutsideAddressRecordedAndRestoredToItsPool(t *testing.T) {
	e := newEnv(t)
	e.pool("l2", nil, "198.51.100.64/30")
	e.pool("other", nil, "198.51.100.128/30")
	stop := e.startController(controller.Options{})
	e.svc("web", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationLoadBalancerIPs] = "198.51.100.66" })
	e.waitIPs("web", "198.51.100.66")
	e.updatePool("l2", func(p *v1beta1.IPAddressPool) { p.Spec.Addresses = []string{"198.51.100.64/31"} })
	e.eventually("l2 records the address outside its ranges", 20*time.Second, func() bool {
		st := e.getPool("l2").Status
		return st.OutsideRanges == 1 && slices.Equal(st.AddressesOutsideRanges, []string{"198.51.100.66"})
	})
	stop()

	// the owner points the record at another pool while no controller runs
	e.updateSvc("web", func(s *corev1.Service) { s.Annotations[v1beta1.AnnotationAllocatedFromPool] = "other" })
	e.startController(controller.Options{})
	e.settle("other")
	e.eventually("the annotation rewritten to the recorded pool", 20*time.Second, func() bool {
		return e.get("web").Annotations[v1beta1.AnnotationAllocatedFromPool] == "l2"
	})
	if got := ips(e.get("web")); !slices.Equal(got, []string{"198.51.100.66"}) {
		t.Fatalf("the address moved across the restart: %v", got)
	}
	if st := e.getPool("l2").Status; st.OutsideRanges != 1 || !slices.Equal(st.AddressesOutsideRanges, []string{"198.51.100.66"}) {
		t.Errorf("l2's record after the restart: %d %v", st.OutsideRanges, st.AddressesOutsideRanges)
	}
	if st := e.getPool("other").Status; st.OutsideRanges != 0 || len(st.AddressesOutsideRanges) != 0 {
		t.Errorf("the annotation's pool counts the address: %d %v", st.OutsideRanges, st.AddressesOutsideRanges)
	}
}
