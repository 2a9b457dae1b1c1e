package l2owner

import (
	"testing"
	"time"
)

func TestReleaseEnds(t *testing.T) {
	since := time.Unix(100, 0)
	grace := 2 * time.Second
	for _, c := range []struct {
		name                   string
		after                  time.Duration
		hasNewOwner, takenOver bool
		done                   bool
	}{
		{"new owner not yet heard", time.Second, true, false, false},
		{"new owner took over", time.Second, true, true, true},
		{"no new owner any more", time.Second, false, false, true},
		{"grace ran out", grace, true, false, true},
		{"just before the grace ends", grace - time.Nanosecond, true, false, false},
		{"at the start", 0, true, false, false},
	} {
		done, latest := ReleaseEnds(since, since.Add(c.after), grace, c.hasNewOwner, c.takenOver)
		if done != c.done || !latest.Equal(since.Add(grace)) {
			t.Errorf("%s: ReleaseEnds = %v, %v; want %v, %v", c.name, done, latest, c.done, since.Add(grace))
		}
	}
}
