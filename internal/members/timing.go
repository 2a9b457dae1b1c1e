package members

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Timing holds the failure-detection and gossip knobs. The trade-offs are
// described in the package comment; start from DefaultTiming (3–10 nodes on
// one LAN) or LargeClusterTiming and change one field at a time.
type Timing struct {
	// ProbeInterval: each member probes one other member this often. It
	// bounds how long a failure goes unnoticed and, with SuspicionMult,
	// how long a suspect has to refute.
	ProbeInterval time.Duration
	// ProbeTimeout: wait this long for a direct ack before asking other
	// members to probe indirectly (and trying TCP). Must leave room for the
	// indirect round trip inside ProbeInterval; set it near the LAN's p99
	// RTT plus scheduling delay on a busy node.
	ProbeTimeout time.Duration
	// SuspicionMult: a suspect is declared dead after
	// SuspicionMult × max(1, log10(members)) × ProbeInterval, unless it
	// refutes. Values of 2 or less mean no confirmations are awaited.
	SuspicionMult int
	// SuspicionMaxTimeoutMult: with more than SuspicionMult members,
	// memberlist (Lifeguard) starts the suspicion timer at this multiple of
	// the timeout above and shortens it as other members confirm.
	SuspicionMaxTimeoutMult int
	// GossipInterval: pending news (suspect, dead, leave, join) is sent
	// to a few random members this often. Nothing is sent when there is
	// no news, so a short interval is cheap when the cluster is quiet.
	GossipInterval time.Duration
	// RetransmitMult: each piece of news is sent
	// RetransmitMult × ceil(log10(members+1)) times.
	RetransmitMult int
	// PushPullInterval: full state exchange with one random member over
	// TCP (anti-entropy). Memberlist stretches it beyond 32 members.
	PushPullInterval time.Duration
	// GossipToTheDead: a dead member still receives gossip this long, so
	// a node declared dead by mistake learns it and refutes; afterwards
	// memberlist forgets it (this package still remembers it as Dead).
	GossipToTheDead time.Duration
	// StreamTimeout: TCP connect and I/O timeout for joins, push/pull and
	// the TCP probe fallback. Joining a node address that never answers
	// waits this long; Settled does not wait for it beyond
	// Config.WelcomeTimeout.
	StreamTimeout time.Duration
	// RejoinInterval: addresses given to Join that are not live members
	// (never reached, or dead) are tried again this often, which also
	// re-merges the two sides of a healed network partition.
	RejoinInterval time.Duration
}

// DefaultTiming is tuned for 3–10 nodes on one LAN: a SIGKILLed speaker
// or a node whose link went down is declared dead in 240–480 ms (measured
// p50 about 290 ms, p99 under 480 ms on 3 nodes; see the package comment
// for the arithmetic, the figures and the price in false suspicions).
func DefaultTiming() Timing {
	return Timing{
		ProbeInterval:           80 * time.Millisecond,
		ProbeTimeout:            40 * time.Millisecond,
		SuspicionMult:           2,
		SuspicionMaxTimeoutMult: 4,
		GossipInterval:          30 * time.Millisecond,
		RetransmitMult:          4,
		PushPullInterval:        15 * time.Second,
		GossipToTheDead:         30 * time.Second,
		StreamTimeout:           2 * time.Second,
		RejoinInterval:          10 * time.Second,
	}
}

// LargeClusterTiming is for tens to hundreds of nodes, or nodes whose
// speaker may be CPU-starved. It is slower (measured p50 1.1 s on 3 nodes;
// in the 200-member simulation with the CPU saturated p50 2.3 s, p99
// 2.8 s, with no false death and no suspicion of a healthy member) but
// keeps Lifeguard's confirmation-driven suspicion active and gives a busy
// node far more time to refute.
func LargeClusterTiming() Timing {
	return Timing{
		ProbeInterval:           200 * time.Millisecond,
		ProbeTimeout:            100 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 4,
		GossipInterval:          100 * time.Millisecond,
		RetransmitMult:          4,
		PushPullInterval:        30 * time.Second,
		GossipToTheDead:         60 * time.Second,
		StreamTimeout:           5 * time.Second,
		RejoinInterval:          30 * time.Second,
	}
}

// FastLargeClusterTiming is LargeClusterTiming with a 120 ms probe
// interval, a 60 ms probe timeout and no wait for confirmations
// (SuspicionMult 2): for hundreds of nodes whose speakers keep the CPU
// they request (the manifests' CPU request and system-node-critical
// priority). In the 200-member simulation with the CPU saturated by
// lower-priority work, detection p50 0.9 s, p99 1.1-1.4 s, with no false
// death and no suspicion of a healthy member. Where a speaker must share
// the CPU equally with busy pods it is not safe: in the same simulation
// with the load at the members' own priority the members fell behind on
// their probes and the cluster collapsed into false deaths;
// LargeClusterTiming gives a starved speaker more time to refute, though
// on a 2-core machine with a newer scheduler both collapsed at equal
// priority (docs/benchmarks.md, Member list). On 3
// nodes: detection p50 0.46 s, p99 0.67 s (BenchmarkDetect), and no
// suspicion in BenchmarkFalseSuspicion.
func FastLargeClusterTiming() Timing {
	t := LargeClusterTiming()
	t.ProbeInterval = 120 * time.Millisecond
	t.ProbeTimeout = 60 * time.Millisecond
	t.SuspicionMult = 2
	return t
}

// MinDetection is the quickest the member list can declare dead a member
// that stops answering: one ProbeInterval for a probe of it (direct,
// indirect, TCP) to fail, then the least suspicion timeout,
// SuspicionMult × ProbeInterval (more than 10 members stretch it by
// log10 of their number; Lifeguard's confirmations only shorten it down
// to that). A member that went unscheduled for less cannot have been
// declared dead, nor its addresses taken over (layer2.Config.PauseAfter):
// 240 ms with DefaultTiming, 1 s with LargeClusterTiming.
func (t Timing) MinDetection() time.Duration {
	return time.Duration(1+t.SuspicionMult) * t.ProbeInterval
}

// PresetNames are the names Preset knows, in the order to list them.
func PresetNames() []string { return []string{"default", "large", "large-fast"} }

// Preset returns the timing of a preset by name: "default"
// (DefaultTiming), "large" (LargeClusterTiming) or "large-fast"
// (FastLargeClusterTiming).
func Preset(name string) (Timing, error) {
	switch name {
	case "default":
		return DefaultTiming(), nil
	case "large":
		return LargeClusterTiming(), nil
	case "large-fast":
		return FastLargeClusterTiming(), nil
	}
	return Timing{}, fmt.Errorf("unknown timing preset %q: want one of %s", name, strings.Join(PresetNames(), ", "))
}

// Validate reports every field that is out of range.
func (t Timing) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("timing.%s is %v: must be positive", name, d))
		}
	}
	atLeastOne := func(name string, n int) {
		if n < 1 {
			errs = append(errs, fmt.Errorf("timing.%s is %d: must be at least 1", name, n))
		}
	}
	positive("ProbeInterval", t.ProbeInterval)
	positive("ProbeTimeout", t.ProbeTimeout)
	positive("GossipInterval", t.GossipInterval)
	positive("PushPullInterval", t.PushPullInterval)
	positive("GossipToTheDead", t.GossipToTheDead)
	positive("StreamTimeout", t.StreamTimeout)
	positive("RejoinInterval", t.RejoinInterval)
	atLeastOne("SuspicionMult", t.SuspicionMult)
	atLeastOne("SuspicionMaxTimeoutMult", t.SuspicionMaxTimeoutMult)
	atLeastOne("RetransmitMult", t.RetransmitMult)
	if t.ProbeTimeout >= t.ProbeInterval {
		errs = append(errs, fmt.Errorf("timing.ProbeTimeout %v must be shorter than timing.ProbeInterval %v "+
			"(indirect probes run in the time between)", t.ProbeTimeout, t.ProbeInterval))
	}
	return errors.Join(errs...)
}

// apply copies the knobs onto a memberlist configuration. Indirect probes,
// the TCP probe fallback and Lifeguard's awareness stay at memberlist's LAN
// defaults (3 indirect checks, probe interval backing off up to 8× on a
// degraded node): they are what keeps one lost packet from killing a node.
func (t Timing) apply(c *memberlist.Config) {
	c.ProbeInterval = t.ProbeInterval
	c.ProbeTimeout = t.ProbeTimeout
	c.SuspicionMult = t.SuspicionMult
	c.SuspicionMaxTimeoutMult = t.SuspicionMaxTimeoutMult
	c.GossipInterval = t.GossipInterval
	c.RetransmitMult = t.RetransmitMult
	c.PushPullInterval = t.PushPullInterval
	c.GossipToTheDeadTime = t.GossipToTheDead
	c.TCPTimeout = t.StreamTimeout
}
