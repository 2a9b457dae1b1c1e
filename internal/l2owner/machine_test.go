package l2owner

import (
	"testing"
	"time"
)

// FuzzMachine feeds random events and checks what must hold whatever the
// order: a pause no longer than PauseAfter changes nothing; an
// announcement always follows answer-on in the same step and leaves the
// machine Owner; the machine defers or yields only to a speaker that the
// event named; Silent matches the phase.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{2, 3, 8, 4, 11, 1})
	f.Add([]byte{0, 2, 3, 5, 11, 3, 4, 11, 6, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		cfg := Config{PauseAfter: 240 * time.Millisecond}
		m := NewIn(cfg, Owner)
		macs := []string{"", "02:00:00:00:00:0b", "02:00:00:00:00:0c"}
		at := epoch
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i], script[i+1]
			at = at.Add(time.Duration(arg) * 10 * time.Millisecond)
			ev := Event{Kind: Kind(op%7) + 1, At: at, By: macs[int(arg)%len(macs)], Speaker: arg%2 == 1,
				Gap: time.Duration(arg) * 20 * time.Millisecond}
			before := m.Phase()
			acts := m.Step(ev)
			if ev.Kind == Pause && ev.Gap <= cfg.PauseAfter && len(acts) > 0 {
				t.Fatalf("a pause of %v (at most %v) acted: %v", ev.Gap, cfg.PauseAfter, acts)
			}
			for j, a := range acts {
				switch a.Do {
				case Announce:
					if j == 0 || acts[j-1].Do != AnswerOn || m.Phase() != Owner {
						t.Fatalf("%v from %v: announce not right after answer-on into owner: %v -> %v", ev.Kind, before, acts, m.Phase())
					}
				case Defer, Yield:
					if !ev.Speaker && ev.Kind != Release || a.To == "" {
						t.Fatalf("%v from %v: %v to %q on an event from %q (speaker %v)", ev.Kind, before, a.Do, a.To, ev.By, ev.Speaker)
					}
				}
			}
			p := m.Phase()
			if m.Silent() != (p == Asking || p == Deferred || p == Yielded) {
				t.Fatalf("silent %v in phase %v", m.Silent(), p)
			}
		}
	})
}
