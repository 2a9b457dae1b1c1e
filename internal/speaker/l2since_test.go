package speaker

import (
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/internal/announce"
)

// TestNoteL2SinceChangedEqualsAll: over random sequences of addresses
// claimed and left, noting only the addresses left (as after planChanged)
// keeps the same times as noting every address (as after plan).
func TestNoteL2SinceChangedEqualsAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var clock time.Time
	now := func() time.Time { return clock }
	newSpeaker := func() *Speaker {
		return &Speaker{opts: Options{Now: now}, l2: newL2State(), l2Since: map[netip.Addr]time.Time{}}
	}
	all, changed := newSpeaker(), newSpeaker()
	for step := range 2000 {
		clock = clock.Add(time.Second)
		var claimed, left []netip.Addr
		for range rng.IntN(4) {
			ip := netip.AddrFrom4([4]byte{198, 51, 100, byte(64 + rng.IntN(16))})
			if _, owned := all.l2.owned[ip]; owned {
				if !slices.Contains(claimed, ip) && !slices.Contains(left, ip) {
					left = append(left, ip)
				}
			} else if !slices.Contains(claimed, ip) && !slices.Contains(left, ip) {
				claimed = append(claimed, ip)
			}
		}
		for _, s := range []*Speaker{all, changed} {
			for _, ip := range claimed {
				s.l2.owned[ip] = announce.L2Owner{IP: ip}
			}
			for _, ip := range left {
				delete(s.l2.owned, ip)
			}
		}
		all.noteL2Since(claimed, announce.Changes{All: true})
		changed.noteL2Since(claimed, announce.Changes{IPs: left})
		if !maps.Equal(all.l2Since, changed.l2Since) {
			t.Fatalf("step %d: noting what changed gives %v, noting everything %v", step, changed.l2Since, all.l2Since)
		}
		if len(all.l2Since) != len(all.l2.owned) {
			t.Fatalf("step %d: %d times for %d owned addresses", step, len(all.l2Since), len(all.l2.owned))
		}
	}
}
