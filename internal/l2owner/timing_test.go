package l2owner

import "testing"

// TestTimingOrder checks the relations the timing constants' comments
// rely on: the greeting ends well within the release grace, the release
// asks fall within it, a deferral after a pause outlasts the question, a
// contested announcement is remembered beyond the first frames of a
// burst, and the fence's verification answers within a refresh.
func TestTimingOrder(t *testing.T) {
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"WelcomeTimeout < ReleaseGrace", WelcomeTimeout < ReleaseGrace},
		{"WelcomeTimeoutFor(ReleaseGrace) == WelcomeTimeout", WelcomeTimeoutFor(ReleaseGrace) == WelcomeTimeout},
		{"last of ReleaseAsks < ReleaseGrace", ReleaseAsks[len(ReleaseAsks)-1] < ReleaseGrace},
		{"ReleaseAsks ascending from 0", ReleaseAsks[0] == 0 && ReleaseAsks[1] < ReleaseAsks[2]},
		{"AskFor < FenceVerify", AskFor < FenceVerify},
		{"ContestedMemory > GratuitousInterval", ContestedMemory > GratuitousInterval},
		{"1.5 × FenceVerify < Refresh", 3*FenceVerify/2 < Refresh},
		{"WelcomeTimeout < FenceSettle", WelcomeTimeout < FenceSettle},
		{"HeartbeatsPerPause > 1", HeartbeatsPerPause > 1},
	} {
		if !c.ok {
			t.Errorf("%s does not hold", c.what)
		}
	}
}
