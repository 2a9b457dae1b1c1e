package k8s

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// memorySink keeps the events a broadcaster writes.
type memorySink struct {
	mu     sync.Mutex
	events []*corev1.Event
}

func (m *memorySink) Create(e *corev1.Event) (*corev1.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
	return e, nil
}
func (m *memorySink) Update(e *corev1.Event) (*corev1.Event, error)          { return m.Create(e) }
func (m *memorySink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return m.Create(e) }

func (m *memorySink) count(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// TestOneReasonDoesNotSilenceAnother: 30 Warnings of one reason on an
// object (a session's connect errors) spend that reason's budget of 25,
// and a Warning of another reason on the same object (the session going
// down) is still written. With client-go's default key it was dropped.
func TestOneReasonDoesNotSilenceAnother(t *testing.T) {
	sink := &memorySink{}
	rec, stop := NewRecorder(context.Background(), sink, scheme.Scheme, "herald-speaker")
	defer stop()
	peer := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "router", Namespace: "herald-system", UID: "1"}}
	for i := 0; i < 30; i++ {
		rec.Eventf(peer, corev1.EventTypeWarning, "SessionProblem", "node node3: not established: attempt %d", i)
	}
	rec.Eventf(peer, corev1.EventTypeWarning, "SessionDown", "node node3: session with 198.51.100.1 down: hold timer expired")
	// The broadcaster handles events in order: once SessionDown is written,
	// every SessionProblem before it was written or dropped.
	deadline := time.Now().Add(30 * time.Second)
	for sink.count("SessionDown") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("SessionDown not written after 30 SessionProblem events (%d of those written)", sink.count("SessionProblem"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := sink.count("SessionProblem"); n != 25 {
		t.Errorf("%d SessionProblem events written, want 25 (the spam filter's burst)", n)
	}
}
