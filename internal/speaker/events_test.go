package speaker

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/test/labkit"
)

// TestEventsPublishNeverBlocks: with no loop consuming, every kind of
// report is published without waiting (the L2 read path and the BGP
// server never wait on the speaker), none is lost, their order is kept,
// the MAC is the event's own copy, and a burst of member-list changes
// is one.
func TestEventsPublishNeverBlocks(t *testing.T) {
	e := NewEvents()
	by := net.HardwareAddr{2, 0, 0, 0, 0, 0x12}
	const n = 10_000
	for i := range n {
		e.Conflict(vip, "eth0", by, i%2 == 0)
		e.MembersChanged()
	}
	e.ForeignClaim(vip, "eth1", by)
	e.Yielded(vip, "eth0", by)
	e.SessionChanged(bgp.SessionEvent{Name: "peer-a", Up: true})
	by[5] = 0xff
	batch, members := e.take()
	if !members {
		t.Error("member-list change not taken")
	}
	if len(batch) != n+3 {
		t.Fatalf("took %d events, want %d", len(batch), n+3)
	}
	for i, ev := range batch[:n] {
		c, ok := ev.(conflictEvent)
		if !ok || c.won != (i%2 == 0) || c.by.String() != "02:00:00:00:00:12" {
			t.Fatalf("event %d = %#v, want the conflict published %d-th", i, ev, i)
		}
	}
	if _, ok := batch[n].(foreignClaimEvent); !ok {
		t.Errorf("event %d = %#v, want the foreign claim", n, batch[n])
	}
	if y, ok := batch[n+1].(yieldEvent); !ok || y.vip != vip {
		t.Errorf("event %d = %#v, want the yield of %s", n+1, batch[n+1], vip)
	}
	if s, ok := batch[n+2].(sessionEvent); !ok || s.ev.Name != "peer-a" {
		t.Errorf("event %d = %#v, want the session of peer-a", n+2, batch[n+2])
	}
	if batch, members := e.take(); len(batch) != 0 || members {
		t.Errorf("second take = %d events, members %v; want nothing", len(batch), members)
	}
}

// TestEventLoopDelivers: what a backend publishes before the loop runs
// and while it runs reaches the speaker: a conflict becomes its Warning
// event, a member-list change a reconcile.
func TestEventLoopDelivers(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s, _ := livenessSpeaker(t, &now, nil)
	rec := record.NewFakeRecorder(10)
	s.l2.events.rec = rec
	if err := s.cluster.serviceIndex.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	s.l2.state.owned[vip] = announce.L2Owner{IP: vip, Node: "node1", Services: []string{"ns/web"}}
	by := net.HardwareAddr{2, 0, 0, 0, 0, 0x12}
	s.events.Conflict(vip, "eth0", by, false) // before the loop runs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.consumeEvents(ctx) }()
	defer func() { cancel(); <-done }()
	waitEvent(t, rec, "stopped answering")
	s.events.Conflict(vip, "eth0", by, true)
	s.events.Conflict(netip.MustParseAddr("198.51.100.99"), "eth0", by, true) // not announced here: no event
	waitEvent(t, rec, "keeps answering")
	if n := s.queue.Len(); n != 0 {
		t.Fatalf("%d reconciles queued before the member list changed", n)
	}
	s.events.MembersChanged()
	s.events.MembersChanged()
	labkit.Eventually(t, 10*time.Second, "a reconcile queued after the member list changed", func() bool { return s.queue.Len() > 0 })
	// delivered in order: the conflict of 198.51.100.99 came before
	if len(rec.Events) != 0 {
		t.Errorf("event %q for an address this node does not announce", <-rec.Events)
	}
}

// waitEvent waits up to 10 s for the next Kubernetes event and checks
// that it is an AddressConflict saying want.
func waitEvent(t *testing.T, rec *record.FakeRecorder, want string) {
	t.Helper()
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning AddressConflict") || !strings.Contains(ev, want) {
			t.Fatalf("event %q, want an AddressConflict saying %q", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no AddressConflict saying %q within 10 s", want)
	}
}
