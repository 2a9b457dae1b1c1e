package lab

import (
	"fmt"
	"slices"
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
	// StallsAreTheLab: a run of probes answered by two nodes whose
	// answers came more than MaxGap late is the lab's, noted and not a
	// problem. A speaker not scheduled for that long (the machine's CPU
	// starvation) is declared dead by the member list, another node
	// claims its addresses, and the two answer until it runs again: a
	// failover, not the hand-over being measured (the CPU-starved owner
	// has its own tests).
	StallsAreTheLab bool
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

// PlannedHandOverGap is the longest an address may go unanswered at a
// hand-over that Herald plans (a rolling update, a speaker's restart),
// measured by a client probing every 20 ms beside control addresses
// (ServedBeside): a client whose ARP or NDP entry lapses at a hand-over
// retransmits after a second; 100 ms keeps a hand-over well inside a TCP
// retransmission and far from the client's retransmit.
const PlannedHandOverGap = 100 * time.Millisecond

// The takeover from MetalLB that docs/metallb.md prescribes promises
// TakeoverGap: from MetalLB's speaker that announced an address exiting
// to Herald's, started beforehand under the announcement hold, answering
// once the script releases the hold (0.9-1.9 s measured; the bound
// leaves room for a busy machine). TakeoverOverlap is how long two MACs
// may answer for one address: Herald's speakers answer nothing until
// MetalLB's have stopped, so Herald and MetalLB never answer side by
// side; but MetalLB's own speakers fail over among themselves as they
// exit one by one (300 ms seen), and right after the release, when every
// speaker starts announcing at once, CPU starvation makes Herald's member
// lists take live nodes for dead: 250-350 ms of two MACs on a quiet
// machine, 600-800 ms in a CI run with the fuzzers running beside the lab
// (docs/benchmarks.md, MetalLB takeover).
const (
	TakeoverGap     = 5 * time.Second
	TakeoverOverlap = 1500 * time.Millisecond
)

// Steady are the limits for an address whose owner does not change, or
// changes by a hand-over that need not overlap: no gap over MaxGap, no
// two nodes side by side.
func Steady() Limits { return Limits{MaxGap: MaxGap, LongGap: LongGap} }

// Rolling are the limits for an address across speakers replaced one by
// one: Steady, with two nodes side by side for HandOverOverlap.
func Rolling() Limits { return Steady().WithOverlap(HandOverOverlap) }

// PlannedHandOver are the limits for hand-overs Herald plans, judged
// beside controls (ServedBeside): no gap over PlannedHandOverGap, no two
// consecutive probes answered by two nodes (make-before-break: the old
// owner silent within one probe of the new owner's first answer), a
// stalled speaker's overlap the lab's.
func PlannedHandOver() Limits {
	return Limits{MaxGap: PlannedHandOverGap, StallsAreTheLab: true}
}

// Takeover are the limits for an address taken over from MetalLB: no gap
// over TakeoverGap, two nodes side by side for TakeoverOverlap at most.
func Takeover() Limits { return Limits{MaxGap: TakeoverGap, MaxOverlap: TakeoverOverlap} }

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
func (pl ProbeLog) Served(lim Limits) Verdict { return pl.ServedBeside(lim, nil) }

// ServedBeside is Served for an address probed beside controls: probe
// logs of addresses that nothing under test moves, probed by the same
// client at the same rate over the same time. A gap while a control went
// unanswered for longer than MaxGap is the lab's (the client, the network
// or the machine stalled): a note, not a problem.
func (pl ProbeLog) ServedBeside(lim Limits, controls []ProbeLog) Verdict {
	var v Verdict
	gap, n := pl.LongestGap()
	conflict, m := pl.LongestConflict()
	v.Summary = fmt.Sprintf("%d probes, %d unanswered (longest gap %v, %d probes), %d answered by two nodes (%d side by side, longest %v, %d probes)",
		len(pl), len(pl.Unanswered()), gap.Round(time.Millisecond), n, len(pl.Conflicts()), len(pl.SustainedConflicts()), conflict.Round(time.Millisecond), m)
	if len(pl) == 0 {
		v.Problems = append(v.Problems, "no probes")
	}
	var labGaps []Run
	for _, c := range controls {
		labGaps = append(labGaps, slices.DeleteFunc(c.Runs(unanswered), func(r Run) bool { return r.D <= lim.MaxGap })...)
	}
	v.judgeGaps(pl, lim, labGaps)
	v.judgeOverlaps(pl, lim)
	return v
}

// judgeGaps makes each gap longer than lim.MaxGap a problem, or a note
// when one of labGaps overlaps it in time; without a problem, a longest
// gap over lim.LongGap is a note.
func (v *Verdict) judgeGaps(pl ProbeLog, lim Limits, labGaps []Run) {
	problems := len(v.Problems)
	for _, g := range pl.Runs(unanswered) {
		if g.D <= lim.MaxGap {
			continue
		}
		if c, ok := overlapping(labGaps, g); ok {
			v.Notes = append(v.Notes, fmt.Sprintf("no answer for %v (%d probes) from %s while a control went unanswered for %v from %s: the lab's",
				g.D.Round(time.Millisecond), g.N, clock(g.At), c.D.Round(time.Millisecond), clock(c.At)))
			continue
		}
		v.Problems = append(v.Problems, fmt.Sprintf("no answer for %v (%d probes); want at most %v; around it:\n%s", g.D.Round(time.Millisecond), g.N, lim.MaxGap, pl.describe(g.First, g.N, 3)))
	}
	if gap, n := pl.LongestGap(); len(v.Problems) == problems && lim.LongGap > 0 && gap > lim.LongGap && gap <= lim.MaxGap {
		v.Notes = append(v.Notes, fmt.Sprintf("no answer for %v (%d probes), more than %v; around it:\n%s", gap.Round(time.Millisecond), n, lim.LongGap, pl.AroundLongestGap(3)))
	}
}

// judgeOverlaps makes runs of probes answered by two nodes problems: with
// no MaxOverlap every run of two probes or more, else each run of two or
// more longer than MaxOverlap. With StallsAreTheLab, a run whose answers
// came more than MaxGap late is a note instead.
func (v *Verdict) judgeOverlaps(pl ProbeLog, lim Limits) {
	var sideBySide []Run
	for _, o := range pl.Runs(answeredByTwo) {
		if o.N < 2 || (lim.MaxOverlap > 0 && o.D <= lim.MaxOverlap) {
			continue
		}
		if lim.StallsAreTheLab && o.Stall > lim.MaxGap {
			v.Notes = append(v.Notes, fmt.Sprintf("answered by two nodes (%v) for %d probes from %s, answers up to %v late: a speaker not scheduled, the lab's",
				o.Nodes, o.N, clock(o.At), o.Stall.Round(time.Millisecond)))
			continue
		}
		sideBySide = append(sideBySide, o)
	}
	if len(sideBySide) == 0 {
		return
	}
	if lim.MaxOverlap > 0 {
		for _, o := range sideBySide {
			v.Problems = append(v.Problems, fmt.Sprintf("two nodes answered side by side for %v; want at most %v; around it:\n%s", o.D.Round(time.Millisecond), lim.MaxOverlap, pl.describe(o.First, o.N, 3)))
		}
		return
	}
	probes, longest := 0, sideBySide[0]
	for _, o := range sideBySide {
		probes += o.N
		if o.D > longest.D {
			longest = o
		}
	}
	v.Problems = append(v.Problems, fmt.Sprintf("%d probes answered by two nodes side by side (first %v); around the longest run:\n%s",
		probes, sideBySide[0].Nodes, pl.describe(longest.First, longest.N, 3)))
}

// Run is a run of consecutive probes of a log.
type Run struct {
	First int           // the index of its first probe in the log
	N     int           // how many probes
	At    time.Time     // the first probe's send time
	D     time.Duration // from At to the next probe's send time (the last probe's at the log's end)
	Nodes []string      // who answered its probes, sorted
	// Stall is the longest any answer to its probes took: a node whose
	// answers come that late was not scheduled for that long.
	Stall time.Duration
}

// Runs lists the runs of consecutive probes in pl that match in.
func (pl ProbeLog) Runs(in func(Probe) bool) []Run {
	var out []Run
	for i := 0; i < len(pl); i++ {
		if !in(pl[i]) {
			continue
		}
		r := Run{First: i, At: pl[i].Sent}
		j := i
		for ; j < len(pl) && in(pl[j]); j++ {
			r.Nodes = append(r.Nodes, pl[j].Nodes()...)
			for _, a := range pl[j].Answers {
				r.Stall = max(r.Stall, a.At.Sub(pl[j].Sent))
			}
		}
		end := pl[len(pl)-1].Sent
		if j < len(pl) {
			end = pl[j].Sent
		}
		slices.Sort(r.Nodes)
		r.Nodes, r.N, r.D = slices.Compact(r.Nodes), j-i, end.Sub(r.At)
		out = append(out, r)
		i = j
	}
	return out
}

// Overlaps says whether r and o overlap in time.
func (r Run) Overlaps(o Run) bool { return r.At.Before(o.At.Add(o.D)) && o.At.Before(r.At.Add(r.D)) }

// overlapping returns the first of runs that overlaps r in time.
func overlapping(runs []Run, r Run) (Run, bool) {
	for _, c := range runs {
		if c.Overlaps(r) {
			return c, true
		}
	}
	return Run{}, false
}

// unanswered says whether nobody answered p.
func unanswered(p Probe) bool { return !p.Answered() }

// clock is t as the logs print it: UTC, to the millisecond.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// CheckServed logs what Served found in probes (what names them) and
// fails t for each problem.
func CheckServed(t testing.TB, what string, probes ProbeLog, lim Limits) {
	t.Helper()
	CheckServedBeside(t, what, probes, nil, lim)
}

// CheckServedBeside is CheckServed by ServedBeside controls.
func CheckServedBeside(t testing.TB, what string, probes ProbeLog, controls []ProbeLog, lim Limits) {
	t.Helper()
	v := probes.ServedBeside(lim, controls)
	t.Logf("%s: %s", what, v.Summary)
	for _, n := range v.Notes {
		t.Logf("%s: %s", what, n)
	}
	for _, p := range v.Problems {
		t.Errorf("%s: %s", what, p)
	}
}
