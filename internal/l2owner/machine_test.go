package l2owner

import (
	"net/netip"
	"testing"
	"time"
)

// FuzzMachine feeds random events and checks what must hold whatever the
// order: a pause no longer than PauseAfter changes nothing; the machine
// announces only as an owner; it defers to, fences for or yields to a
// host only when an event named that host (or, on a release, the host
// it watched or heard before); a host that is no speaker's node never
// moves an owner out of Owner (a LAN host cannot silence it); Silent
// matches the phase.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{3, 3, 8, 4, 11, 1})
	f.Add([]byte{0, 2, 3, 5, 11, 3, 4, 11, 6, 0})
	f.Add([]byte{4, 1, 4, 201, 10, 51, 10, 26, 6, 7})
	f.Fuzz(func(t *testing.T, script []byte) {
		cfg := Config{PauseAfter: 240 * time.Millisecond, Addr: netip.MustParseAddr("198.51.100.10"), MAC: scenarioMAC}
		m := NewIn(cfg, Owner)
		macs := []string{"", "02:00:00:00:00:0b", "02:00:00:00:00:0c", "02:00:00:00:00:ee"}
		known := map[string]bool{}
		at := epoch
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i], script[i+1]
			at = at.Add(time.Duration(arg) * 10 * time.Millisecond)
			ev := Event{Kind: Kind(op%uint8(Tick)) + 1, At: at, By: macs[int(arg)%len(macs)], Speaker: arg%2 == 1,
				Gap: time.Duration(arg) * 20 * time.Millisecond}
			if ev.By != "" {
				known[ev.By] = true
			}
			before := m.Phase()
			acts := m.Step(ev)
			if ev.Kind == Pause && ev.Gap <= cfg.PauseAfter && len(acts) > 0 {
				t.Fatalf("a pause of %v (at most %v) acted: %v", ev.Gap, cfg.PauseAfter, acts)
			}
			for _, a := range acts {
				switch a.Do {
				case Announce, AnnounceOnce, Reassert:
					if m.Phase() != Owner && m.Phase() != Fenced && m.Phase() != Deferred {
						t.Fatalf("%v from %v: %v into %v", ev.Kind, before, a.Do, m.Phase())
					}
				case Defer, Fence:
					if a.To != ev.By || !ev.Speaker {
						t.Fatalf("%v from %v: %v to %q on an event from %q (speaker %v)", ev.Kind, before, a.Do, a.To, ev.By, ev.Speaker)
					}
				case Yield:
					if a.To == "" || !known[a.To] {
						t.Fatalf("%v from %v: yield to %q, never named", ev.Kind, before, a.To)
					}
				}
			}
			if before == Owner && !ev.Speaker && ev.Kind >= Announced && ev.Kind <= GaveUp && m.Phase() != Owner {
				t.Fatalf("%v from a host that is no speaker's moved an owner to %v: %v", ev.Kind, m.Phase(), acts)
			}
			p := m.Phase()
			if m.Silent() != (p == Asking || p == Deferred || p == Yielded || p == Fenced) {
				t.Fatalf("silent %v in phase %v", m.Silent(), p)
			}
		}
	})
}
