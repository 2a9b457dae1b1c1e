package speaker

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
)

// welcomingMembers is a member list that records, in one list with the
// L2 backend's, when the speaker reads its generation and its states and
// reports a decision applied.
type welcomingMembers struct {
	fakeMembers
	gen    uint64
	events *[]string
}

func (w *welcomingMembers) Generation() uint64 {
	*w.events = append(*w.events, fmt.Sprintf("generation %d", w.gen))
	return w.gen
}

func (w *welcomingMembers) Applied(gen uint64) {
	*w.events = append(*w.events, fmt.Sprintf("applied %d", gen))
}

func (w *welcomingMembers) State(node string) members.State {
	*w.events = append(*w.events, "state of "+node)
	return w.fakeMembers.State(node)
}

type eventL2 struct{ events *[]string }

func (l eventL2) SetAnnouncements(want []layer2.Announcement) {
	*l.events = append(*l.events, fmt.Sprintf("announce %d", len(want)))
}
func (l eventL2) Interfaces(netip.Addr) []string { return []string{"eth0"} }

// TestReconcileReportsAppliedGeneration: a reconcile reads the member
// list's generation before any member state and reports it applied once
// the L2 backend has the decision, so a starting member is welcomed
// (internal/members' welcome.go) only once this node hands over what it
// is to take.
func TestReconcileReportsAppliedGeneration(t *testing.T) {
	var events []string
	ml := &welcomingMembers{fakeMembers: fakeMembers{settled: true, states: map[string]members.State{}}, gen: 3, events: &events}
	kube, herald := announcingClients(benchService(1, 1))
	_, _ = kube.CoreV1().Nodes().Create(context.Background(), benchNode(2), metav1.CreateOptions{})
	s, _ := startedSpeaker(t, kube, herald, 1, Options{NodeName: "node1", Namespace: testNS, L2: eventL2{&events}, BGP: &recordingBGP{}, Members: ml})
	// wantAnnounce: the decision changed (the first one always does)
	check := func(gen uint64, wantAnnounce bool) {
		t.Helper()
		if len(events) < 2 || events[0] != fmt.Sprintf("generation %d", gen) || events[len(events)-1] != fmt.Sprintf("applied %d", gen) {
			t.Fatalf("reconcile at generation %d: %q, want the generation read first and reported applied last", gen, events)
		}
		if got := slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "announce ") }); got != wantAnnounce {
			t.Fatalf("reconcile at generation %d: %q, announced %v, want %v", gen, events, got, wantAnnounce)
		}
		if !slices.Contains(events, "state of node2") {
			t.Fatalf("reconcile at generation %d: %q, node2's state never read", gen, events)
		}
	}
	check(3, true)
	events, ml.gen = nil, 9
	ml.states["node2"] = members.Alive
	if err := s.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, kept := s.l2.state.owned[netip.MustParseAddr("2001:db8:f::1")]
	check(9, !kept) // handed to node2, or kept unchanged
}
