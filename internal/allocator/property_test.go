package allocator

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }
func (s randSource) more() bool     { return true }

// TestRandomOperations runs thousands of random Assign, Release, Restore
// and SetPools calls over IPv4, IPv6 and dual-stack pools, checking every
// invariant after each. A failure names its seed; rerun it with
// -run 'TestRandomOperations/seed_N'.
func TestRandomOperations(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			src := randSource{rand.New(rand.NewPCG(seed, 0x6865726c64))}
			s := newSim(t, src, fmt.Sprintf("seed %d", seed))
			s.run(steps)
			s.logStats()
			for _, k := range []string{ // full runs only: -short draws too few"Assign changed the count, keeping addresses", "Assign joined a shared address of several per family",
				"Restart: the run goes on with the new Allocator", "Restore ok"} {
				if s.stats[k] == 0 && !testing.Short() {
					t.Errorf("no %q: the generator misses a case", k)
				}
			}
		})
	}
}
