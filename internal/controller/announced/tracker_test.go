package announced_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/herald-lb/herald/internal/controller/announced"
)

// TestSpeakerSeenRequeuesItsDependents: a speaker going up or down
// returns the Services depending on its node, sorted; a node first seen
// down, or seen again as it was, returns nothing; DependOn with other
// nodes (or none) drops a Service from the nodes it left.
func TestSpeakerSeenRequeuesItsDependents(t *testing.T) {
	tr := announced.NewTracker()
	a, b := cache.ObjectName{Namespace: "ns", Name: "a"}, cache.ObjectName{Namespace: "ns", Name: "b"}
	tr.DependOn(b, []string{"n1", "n2"})
	tr.DependOn(a, []string{"n1"})
	for _, step := range []struct {
		node    string
		alive   bool
		changed bool
		want    []cache.ObjectName
	}{
		{"n3", false, false, nil}, // first seen down: no change
		{"n1", true, true, []cache.ObjectName{a, b}},
		{"n1", true, false, nil},
		{"n2", true, true, []cache.ObjectName{b}},
		{"n1", false, true, []cache.ObjectName{a, b}},
		{"n1", false, false, nil},
	} {
		changed, got := tr.SpeakerSeen(step.node, step.alive)
		if changed != step.changed || !slices.Equal(got, step.want) {
			t.Errorf("%s alive=%v: changed %v %v, want %v %v", step.node, step.alive, changed, got, step.changed, step.want)
		}
	}
	tr.DependOn(b, []string{"n2"})
	tr.DependOn(a, nil)
	if _, got := tr.SpeakerSeen("n1", true); len(got) != 0 {
		t.Errorf("n1 up: %v, want no Service (none depends on it any more)", got)
	}
	if _, got := tr.SpeakerSeen("n2", false); !slices.Equal(got, []cache.ObjectName{b}) {
		t.Errorf("n2 down: %v, want %v", got, b)
	}
}

// TestNoteTrue: a change is a True condition saying something else than
// the last True one, whatever came in between; a new Tracker takes the
// Service's current True condition as the last; ForgetTrue starts over.
func TestNoteTrue(t *testing.T) {
	tr := announced.NewTracker()
	key := cache.ObjectName{Namespace: "ns", Name: "web"}
	T, U := metav1.ConditionTrue, metav1.ConditionUnknown
	prev := &metav1.Condition{Status: T, Message: "by n1"}
	for i, step := range []struct {
		status metav1.ConditionStatus
		msg    string
		want   bool
	}{
		{T, "by n1", false}, // as the status says
		{U, "waiting for n2", false},
		{T, "by n2", true},
		{T, "by n2", false},
		{metav1.ConditionFalse, "n2 down", false},
		{T, "by n2", false},
	} {
		if got := tr.NoteTrue(key, prev, step.status, step.msg); got != step.want {
			t.Errorf("step %d (%s %q): changed %v, want %v", i, step.status, step.msg, got, step.want)
		}
		prev = &metav1.Condition{Status: step.status, Message: step.msg}
	}
	if tr.Remembered() != 1 {
		t.Errorf("%d Services remembered, want 1", tr.Remembered())
	}
	tr.ForgetTrue(key)
	if tr.Remembered() != 0 || tr.NoteTrue(key, nil, T, "by n3") {
		t.Error("a forgotten Service's first True condition counts as a change")
	}
}
