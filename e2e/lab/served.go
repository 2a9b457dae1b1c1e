package lab

import (
	"fmt"
	"testing"
	"time"
)

// Limits say how an address may be served while a probe log records it:
// what every end-to-end suite checks with ProbeLog.Served.
type Limits struct {
	// MaxGap is the longest run of unanswered probes allowed.
	MaxGap time.Duration
	// LongGap is the length from which a run of unanswered probes is
	// described probe by probe even when it passes.
	LongGap time.Duration
	// MaxOverlap is the longest run of probes answered by two nodes side
	// by side allowed (a make-before-break hand-over). Zero allows none
	// but the single probe at a hand-over whose answer window caught the
	// old owner's late answer and the new owner's (SustainedConflicts).
	MaxOverlap time.Duration
}

// Served limits. Probes carry the kernel's receive times, so a gap is
// not the monitor's doing. On a 2-core machine running the whole
// cluster, two things delay answers while pods start and stop (rolling
// updates, drains):
//   - the network: frames wait in the kernel's backlog for ksoftirqd,
//     which the lab's cgroups outweighed; the client then saw 100-210 ms
//     without an answer and every queued answer at once. The lab runs
//     ksoftirqd real-time (softirq.go), which brought the longest gap
//     of a rolling update to 31-91 ms.
//   - the speaker: herald_l2_answer_delay_seconds (from the kernel's
//     receive time) counts answers later than a 10 ms probe interval in
//     those moments: single speaker threads waited on the run queue.
//
// A client retransmits its ARP request after a second; a failed
// hand-over or failover leaves an address dark for the 2 s release grace
// or longer. HandOverOverlap is how long two nodes may answer side by
// side at one make-before-break hand-over of a rolling update: the old
// owner stops when it has read the new owner's gratuitous ARP.
const (
	MaxGap          = 250 * time.Millisecond
	LongGap         = 100 * time.Millisecond
	HandOverOverlap = 100 * time.Millisecond
)

// Steady are the limits for an address whose owner does not change, or
// changes by a hand-over that need not overlap: no gap over MaxGap, no
// two nodes side by side.
func Steady() Limits { return Limits{MaxGap: MaxGap, LongGap: LongGap} }

// Rolling are the limits for an address across speakers replaced one by
// one: Steady, with two nodes side by side for HandOverOverlap.
func Rolling() Limits { return Steady().WithOverlap(HandOverOverlap) }

// WithOverlap returns lim allowing two nodes side by side for d.
func (lim Limits) WithOverlap(d time.Duration) Limits {
	lim.MaxOverlap = d
	return lim
}

// Verdict is what Served found: a summary of the counts, notes worth
// printing on success, and the problems (none: served).
type Verdict struct {
	Summary  string
	Notes    []string
	Problems []string
}

// Served judges the log against lim: an empty log, a gap longer than
// MaxGap, or two nodes side by side beyond MaxOverlap are problems.
func (pl ProbeLog) Served(lim Limits) Verdict {
	var v Verdict
	gap, n := pl.LongestGap()
	conflict, m := pl.LongestConflict()
	v.Summary = fmt.Sprintf("%d probes, %d unanswered (longest gap %v, %d probes), %d answered by two nodes (%d side by side, longest %v, %d probes)",
		len(pl), len(pl.Unanswered()), gap.Round(time.Millisecond), n, len(pl.Conflicts()), len(pl.SustainedConflicts()), conflict.Round(time.Millisecond), m)
	if len(pl) == 0 {
		v.Problems = append(v.Problems, "no probes")
	}
	switch {
	case gap > lim.MaxGap:
		v.Problems = append(v.Problems, fmt.Sprintf("no answer for %v (%d probes); want at most %v; around it:\n%s", gap.Round(time.Millisecond), n, lim.MaxGap, pl.AroundLongestGap(3)))
	case lim.LongGap > 0 && gap > lim.LongGap:
		v.Notes = append(v.Notes, fmt.Sprintf("no answer for %v (%d probes), more than %v; around it:\n%s", gap.Round(time.Millisecond), n, lim.LongGap, pl.AroundLongestGap(3)))
	}
	switch s := pl.SustainedConflicts(); {
	case lim.MaxOverlap == 0 && len(s) > 0:
		v.Problems = append(v.Problems, fmt.Sprintf("%d probes answered by two nodes side by side (first %v); around the longest run:\n%s", len(s), s[0].Nodes(), pl.AroundLongestConflict(3)))
	case lim.MaxOverlap > 0 && m > 1 && conflict > lim.MaxOverlap:
		v.Problems = append(v.Problems, fmt.Sprintf("two nodes answered side by side for %v; want at most %v; around it:\n%s", conflict.Round(time.Millisecond), lim.MaxOverlap, pl.AroundLongestConflict(3)))
	}
	return v
}

// CheckServed logs what Served found in probes (what names them) and
// fails t for each problem.
func CheckServed(t testing.TB, what string, probes ProbeLog, lim Limits) {
	t.Helper()
	v := probes.Served(lim)
	t.Logf("%s: %s", what, v.Summary)
	for _, n := range v.Notes {
		t.Logf("%s: %s", what, n)
	}
	for _, p := range v.Problems {
		t.Errorf("%s: %s", what, p)
	}
}
