package allocator

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/iprange"
	"github.com/herald-lb/herald/internal/service"
)

func TestOrphanRestoredAddressIsAttributedWhenAPoolAppears(t *testing.T) {
	a := New()
	req := service.Request{Key: "ns/web", Namespace: "ns", Families: []corev1.IPFamily{corev1.IPv4Protocol}}
	ip := netip.MustParseAddr("198.51.100.70")
	if err := a.Restore(req, "", []netip.Addr{ip}); err != nil {
		t.Fatal(err)
	}
	if as, _ := a.Lookup("ns/web"); as.Pool != "" {
		t.Fatalf("restored outside every pool, yet attributed to %q", as.Pool)
	}
	r, _ := iprange.Parse("198.51.100.64/28")
	if err := a.SetPools([]Pool{{Name: "late", Ranges: []iprange.Range{r}, AutoAssign: true}}); err != nil {
		t.Fatal(err)
	}
	as, _ := a.Lookup("ns/web")
	if as.Pool != "late" || as.IPs[0] != ip {
		t.Errorf("after the pool appeared: %+v", as)
	}
	if u := a.Usage("late"); u.IPv4.Assigned != 1 || u.IPv4.Available != 15 {
		t.Errorf("usage %+v", u)
	}
	// the Service asks for the pool by name: it keeps its address
	req.Pool = "late"
	got, err := a.Assign(req)
	if err != nil || got.IPs[0] != ip {
		t.Errorf("Assign moved the address: %+v, %v", got, err)
	}
}
