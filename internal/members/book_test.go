package members

import (
	"maps"
	"slices"
	"testing"
)

func TestBookTransitions(t *testing.T) {
	type step struct {
		event string
		want  State
		moved bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"join", []step{{"alive", Alive, true}, {"alive", Alive, false}}},
		{"crash", []step{{"alive", Alive, true}, {"suspect", Suspect, true}, {"dead", Dead, true}}},
		{"refuted suspicion", []step{{"alive", Alive, true}, {"suspect", Suspect, true}, {"reachable", Alive, true}}},
		{"graceful leave", []step{{"alive", Alive, true}, {"left", Left, true}, {"dead", Left, false}}},
		{"back after dead", []step{{"alive", Alive, true}, {"dead", Dead, true}, {"alive", Alive, true}}},
		{"back after left", []step{{"alive", Alive, true}, {"left", Left, true}, {"alive", Alive, true}}},
		{"late probe failure after dead", []step{{"alive", Alive, true}, {"dead", Dead, true}, {"suspect", Dead, false}}},
		{"late probe success after dead", []step{{"alive", Alive, true}, {"dead", Dead, true}, {"reachable", Dead, false}}},
		{"probe success on alive", []step{{"alive", Alive, true}, {"reachable", Alive, false}}},
		{"suspect of a node never seen", []step{{"suspect", Unknown, false}}},
		{"dead of a node never seen", []step{{"dead", Dead, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBook()
			for i, s := range tc.steps {
				tr, moved := applyEvent(t, b, s.event, "n1")
				if moved != s.moved || b.state("n1") != s.want {
					t.Fatalf("step %d (%s): state %v moved %v, want %v moved %v",
						i, s.event, b.state("n1"), moved, s.want, s.moved)
				}
				if moved && (tr.node != "n1" || tr.to != s.want || tr.at.IsZero()) {
					t.Fatalf("step %d (%s): transition %+v", i, s.event, tr)
				}
			}
		})
	}
}

func applyEvent(t *testing.T, b *book, event, node string) (transition, bool) {
	switch event {
	case "alive":
		return b.alive(node)
	case "left":
		return b.left(node)
	case "dead":
		return b.dead(node)
	case "suspect":
		return b.suspect(node)
	case "reachable":
		return b.reachable(node)
	}
	t.Fatalf("unknown event %q", event)
	return transition{}, false
}

func TestBookSnapshotAndCounts(t *testing.T) {
	b := newBook()
	b.alive("a")
	b.alive("b")
	b.dead("c")
	b.alive("d")
	b.left("d")
	snap := b.snapshot()
	want := map[string]State{"a": Alive, "b": Alive, "c": Dead, "d": Left}
	if len(snap) != len(want) {
		t.Fatalf("snapshot %v, want %v", snap, want)
	}
	for n, s := range want {
		if snap[n] != s {
			t.Errorf("snapshot[%s] = %v, want %v", n, snap[n], s)
		}
	}
	snap["a"] = Dead // the snapshot is a copy
	if b.state("a") != Alive {
		t.Error("changing the snapshot changed the book")
	}
	counts := b.counts()
	if counts[Alive] != 2 || counts[Dead] != 1 || counts[Left] != 1 || counts[Suspect] != 0 {
		t.Errorf("counts %v", counts)
	}
	if b.state("never") != Unknown || !b.since("never").IsZero() {
		t.Error("a node never seen is not Unknown")
	}
}

func TestStateString(t *testing.T) {
	want := map[State]string{Unknown: "unknown", Alive: "alive", Suspect: "suspect", Dead: "dead", Left: "left", State(42): "unknown"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("State(%d).String() = %q, want %q", int(s), s.String(), w)
		}
	}
}

// TestBookRetain: a node whose Node object is gone is forgotten once it is
// Dead or Left; a live one stays whatever Kubernetes says.
func TestBookRetain(t *testing.T) {
	b := newBook()
	b.alive("kept-alive")
	b.alive("gone-alive")
	b.alive("gone-suspect")
	b.suspect("gone-suspect")
	b.dead("gone-dead")
	b.alive("gone-left")
	b.left("gone-left")
	b.dead("kept-dead")
	gone := b.retain(map[string]bool{"kept-alive": true, "kept-dead": true})
	if want := []string{"gone-dead", "gone-left"}; !slices.Equal(gone, want) {
		t.Fatalf("forgot %v, want %v", gone, want)
	}
	want := map[string]State{"kept-alive": Alive, "gone-alive": Alive, "gone-suspect": Suspect, "kept-dead": Dead}
	if got := b.snapshot(); !maps.Equal(got, want) {
		t.Fatalf("remembers %v, want %v", got, want)
	}
	if b.state("gone-dead") != Unknown {
		t.Error("a forgotten node must read Unknown")
	}
	if gone := b.retain(map[string]bool{"kept-alive": true, "kept-dead": true}); len(gone) != 0 {
		t.Errorf("second retain forgot %v", gone)
	}
}
