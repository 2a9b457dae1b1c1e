package speaker

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/internal/announce"
)

// TestConflictWarnsOnTheServices: the fence's decision becomes a Warning
// event on every Service holding the address.
func TestConflictWarnsOnTheServices(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, _ := livenessSpeaker(t, &now, nil)
	rec := record.NewFakeRecorder(10)
	s.l2.events.rec = rec
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	if err := s.cluster.serviceIndex.Add(svc); err != nil {
		t.Fatal(err)
	}
	s.l2.state.owned[vip] = announce.L2Owner{IP: vip, Node: "node1", Services: []string{"ns/web"}}
	s.l2.conflict(vip, "eth0", net.HardwareAddr{2, 0, 0, 0, 0, 0x12}, false)
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning AddressConflict") || !strings.Contains(ev, "02:00:00:00:00:12") || !strings.Contains(ev, "stopped answering") {
			t.Errorf("event %q", ev)
		}
	default:
		t.Fatal("no event")
	}
	s.l2.conflict(netip.MustParseAddr("198.51.100.99"), "eth0", net.HardwareAddr{2, 0, 0, 0, 0, 0x12}, true)
	if len(rec.Events) != 0 {
		t.Error("event for an address this node does not announce")
	}
}

// TestForeignClaimWarnsOnTheServices: a foreign host's claim becomes a
// Warning event on every Service holding the address.
func TestForeignClaimWarnsOnTheServices(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, _ := livenessSpeaker(t, &now, nil)
	rec := record.NewFakeRecorder(10)
	s.l2.events.rec = rec
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	if err := s.cluster.serviceIndex.Add(svc); err != nil {
		t.Fatal(err)
	}
	s.l2.state.owned[vip] = announce.L2Owner{IP: vip, Node: "node1", Services: []string{"ns/web"}}
	s.l2.foreignClaim(vip, "eth0", net.HardwareAddr{2, 0, 0, 0, 0, 0x66})
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning ForeignAddressClaim") || !strings.Contains(ev, "02:00:00:00:00:66") || !strings.Contains(ev, "keeps answering") {
			t.Errorf("event %q", ev)
		}
	default:
		t.Fatal("no event")
	}
	s.l2.foreignClaim(netip.MustParseAddr("198.51.100.99"), "eth0", net.HardwareAddr{2, 0, 0, 0, 0, 0x66})
	if len(rec.Events) != 0 {
		t.Error("event for an address this node does not announce")
	}
}
