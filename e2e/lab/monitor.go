package lab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
)

// Probe is one who-has (or NS) the monitor sent and the answers matched
// to it (see matchAnswers).
type Probe struct {
	Seq  int
	Sent time.Time
	// From is the address the probe was sent from (invalid: the client's
	// own, the one source of the probes).
	From    netip.Addr
	Answers []Answer
}

// Answered reports whether anyone answered.
func (p Probe) Answered() bool { return len(p.Answers) > 0 }

// Nodes lists the distinct owners of the answering MACs, sorted ("" for
// a MAC that is no lab host's).
func (p Probe) Nodes() []string {
	var out []string
	for _, a := range p.Answers {
		out = append(out, a.Node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MACs lists the distinct answering MACs, sorted.
func (p Probe) MACs() []string {
	var out []string
	for _, a := range p.Answers {
		out = append(out, a.MAC.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Monitor probes one address from the client at a fixed interval.
type Monitor struct {
	lab    *Lab
	vip    netip.Addr
	s      *stream
	closed atomic.Bool
}

// StartARPMonitor sends an ARP who-has for vip from the client every
// interval (e.g. 20ms) until Stop, recording each probe's answers.
func (l *Lab) StartARPMonitor(vip netip.Addr, interval time.Duration) (*Monitor, error) {
	if !vip.Is4() {
		return nil, fmt.Errorf("ARP monitor: %v is not IPv4 (use StartNDPMonitor)", vip)
	}
	return l.startMonitor(vip, interval)
}

// StartNDPMonitor does the same with multicast neighbor solicitations.
func (l *Lab) StartNDPMonitor(vip netip.Addr, interval time.Duration) (*Monitor, error) {
	if !vip.Is6() {
		return nil, fmt.Errorf("NDP monitor: %v is not IPv6 (use StartARPMonitor)", vip)
	}
	return l.startMonitor(vip, interval)
}

// StartMonitor starts an ARP monitor for an IPv4 vip and an NDP monitor
// for an IPv6 one.
func (l *Lab) StartMonitor(vip netip.Addr, interval time.Duration) (*Monitor, error) {
	if vip.Is4() {
		return l.StartARPMonitor(vip, interval)
	}
	return l.StartNDPMonitor(vip, interval)
}

func (l *Lab) startMonitor(vip netip.Addr, interval time.Duration) (*Monitor, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("monitor of %v: interval %s", vip, interval)
	}
	sources := ProbeSourcesV4
	if vip.Is6() {
		sources = ProbeSourcesV6
	}
	s, err := l.startStream(Client, "monitor-"+vip.String(), "monitor", "-i", "eth0", "-target", vip.String(), "-interval", interval.String(), "-sources", sources)
	if err != nil {
		return nil, err
	}
	return &Monitor{lab: l, vip: vip, s: s}, nil
}

// Probes returns the probes recorded so far, in order, each with the
// answers matched to it (matchAnswers).
func (m *Monitor) Probes() ProbeLog {
	var out ProbeLog
	for _, line := range m.s.snapshot() {
		if p := line.Probe; p != nil {
			out = append(out, m.probe(p))
		}
	}
	return matchAnswers(out, AnswerWindow)
}

// AnswerWindow is how long after a probe an answer still answers it: the
// time a client waits before it sends its ARP request or neighbour
// solicitation again (Linux: retrans_time_ms, 1 s).
const AnswerWindow = time.Second

// matchAnswers gives each answer to the probe it answers: the latest
// probe up to the one it was read after that was sent from the address
// the answer went to (Answer.To: a responder answers a request's source;
// probe n comes from the (n mod 32)th source, see ProbeSourcesV4), at
// most window before the answer arrived, and that the answer's MAC has
// not answered yet (a responder answers each request once). An answer
// read late, after later probes, thus answers its own probe, not the
// later ones another node may have answered meanwhile (a starved old
// owner's queue read at a hand-over). A backlog of more than 32 probes
// answered at once (a speaker not scheduled for half a second) fills the
// probes of each source from the latest back: every probe gets one
// answer, if not each its own. An answer no such probe waits for (a
// second answer to one request, an answer later than window) stays with
// the probe it was read after. Probes from one source (From and To
// invalid) are matched the same way: a burst read together answers as
// many of the latest probes.
func matchAnswers(in ProbeLog, window time.Duration) ProbeLog {
	out := make(ProbeLog, len(in))
	for i, p := range in {
		out[i] = Probe{Seq: p.Seq, Sent: p.Sent, From: p.From}
	}
	answeredBy := func(j int, mac string) bool {
		return slices.ContainsFunc(out[j].Answers, func(a Answer) bool { return a.MAC.String() == mac })
	}
	for i, p := range in {
		for _, a := range p.Answers {
			to := i
			for j := i; j >= 0 && a.At.Sub(out[j].Sent) <= window; j-- {
				if out[j].From == a.To && !out[j].Sent.After(a.At) && !answeredBy(j, a.MAC.String()) {
					to = j
					break
				}
			}
			out[to].Answers = append(out[to].Answers, a)
		}
	}
	return out
}

// Late returns the probes whose first answer came more than d after they
// were sent (answered, but late).
func (pl ProbeLog) Late(d time.Duration) ProbeLog {
	return slices.DeleteFunc(slices.Clone(pl), func(p Probe) bool {
		return !p.Answered() || slices.MinFunc(p.Answers, func(a, b Answer) int { return a.At.Compare(b.At) }).At.Sub(p.Sent) <= d
	})
}

func (m *Monitor) probe(p *probe.Probe) Probe {
	from, _ := netip.ParseAddr(p.From) // "" when the probes have one source
	return Probe{Seq: p.Seq, Sent: time.Unix(0, p.Sent), From: from, Answers: m.lab.answers(p.Answers)}
}

// Wait polls until a probe sent after since matches, and returns it.
func (m *Monitor) Wait(ctx context.Context, since time.Time, match func(Probe) bool) (Probe, error) {
	for {
		for _, p := range m.Probes().After(since) {
			if match(p) {
				return p, nil
			}
		}
		if m.s.proc.Exited() {
			return Probe{}, fmt.Errorf("monitor of %v exited: %s", m.vip, m.s.proc.Tail(10))
		}
		select {
		case <-ctx.Done():
			return Probe{}, fmt.Errorf("monitor of %v: %w", m.vip, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends the monitor and returns every probe.
func (m *Monitor) Stop() (ProbeLog, error) {
	if m.closed.Swap(true) {
		return m.Probes(), nil
	}
	err := m.s.stop()
	return m.Probes(), err
}

// ProbeLog is a monitor's probes in order, with the questions failover
// tests ask.
type ProbeLog []Probe

// After returns the probes sent at or after t.
func (pl ProbeLog) After(t time.Time) ProbeLog {
	i, _ := slices.BinarySearchFunc(pl, t, func(p Probe, t time.Time) int { return p.Sent.Compare(t) })
	return pl[i:]
}

// Between returns the probes sent in [from, to).
func (pl ProbeLog) Between(from, to time.Time) ProbeLog {
	after := pl.After(from)
	j, _ := slices.BinarySearchFunc(after, to, func(p Probe, t time.Time) int { return p.Sent.Compare(t) })
	return after[:j]
}

// FirstAnswered returns the first answered probe (by node, when node is
// not "") in the log.
func (pl ProbeLog) FirstAnswered(node string) (Probe, bool) {
	for _, p := range pl {
		if p.Answered() && (node == "" || slices.Contains(p.Nodes(), node)) {
			return p, true
		}
	}
	return Probe{}, false
}

// Unanswered returns the probes nobody answered.
func (pl ProbeLog) Unanswered() ProbeLog {
	return slices.DeleteFunc(slices.Clone(pl), Probe.Answered)
}

// Conflicts returns the probes answered by more than one MAC.
func (pl ProbeLog) Conflicts() ProbeLog {
	return slices.DeleteFunc(slices.Clone(pl), func(p Probe) bool { return len(p.MACs()) < 2 })
}

// LongestGap is the longest run of consecutive unanswered probes: from
// the first unanswered one's send time to the next answered one's (or
// the last probe's), and how many probes went unanswered.
func (pl ProbeLog) LongestGap() (time.Duration, int) {
	return pl.longestRun(func(p Probe) bool { return !p.Answered() })
}

// longestRun is the longest run of consecutive probes in, measured from
// its first probe's send time to the next probe's (or the last probe's).
func (pl ProbeLog) longestRun(in func(Probe) bool) (time.Duration, int) {
	d, n, _ := pl.longestRunAt(in)
	return d, n
}

// longestRunAt is longestRun with the index of the run's first probe (-1
// when there is none).
func (pl ProbeLog) longestRunAt(in func(Probe) bool) (time.Duration, int, int) {
	var best time.Duration
	bestN, bestAt, n, at := 0, -1, 0, 0
	var start time.Time
	for i, p := range pl {
		if in(p) {
			if n == 0 {
				start, at = p.Sent, i
			}
			n++
			if i < len(pl)-1 {
				continue
			}
		}
		if n > 0 {
			if d := p.Sent.Sub(start); d > best || (d == best && n > bestN) {
				best, bestN, bestAt = d, n, at
			}
			n = 0
		}
	}
	return best, bestN, bestAt
}

// AroundLongestGap describes the probes around the longest gap, from
// context probes before it to context after: each probe's send time
// relative to the gap's start, and who answered when. It is what a failed
// check prints, to tell a late answer from a missing one.
func (pl ProbeLog) AroundLongestGap(context int) string {
	_, n, at := pl.longestRunAt(func(p Probe) bool { return !p.Answered() })
	return pl.describe(at, n, context)
}

// AroundLongestConflict does the same for the longest run of probes
// answered by more than one node.
func (pl ProbeLog) AroundLongestConflict(context int) string {
	_, n, at := pl.longestRunAt(answeredByTwo)
	return pl.describe(at, n, context)
}

func (pl ProbeLog) describe(at, n, context int) string {
	if at < 0 {
		return "(no such run)"
	}
	t0 := pl[at].Sent
	var b strings.Builder
	fmt.Fprintf(&b, "  (the run starts at %s UTC)\n", t0.UTC().Format("15:04:05.000"))
	for i := max(0, at-context); i < min(len(pl), at+n+context); i++ {
		p := pl[i]
		fmt.Fprintf(&b, "  probe %d sent %v:", p.Seq, p.Sent.Sub(t0).Round(100*time.Microsecond))
		if len(p.Answers) == 0 {
			b.WriteString(" no answer")
		}
		for _, a := range p.Answers {
			node := a.Node
			if node == "" {
				node = a.MAC.String()
			}
			fmt.Fprintf(&b, " %s after %v", node, a.At.Sub(p.Sent).Round(100*time.Microsecond))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// SustainedConflicts returns the probes answered by more than one node
// whose neighbour probe was too: two nodes answering side by side, not
// the one probe at a hand-over whose window caught the old owner's late
// answer and the new owner's (a monitor probing every 10 ms attributes an
// answer to the probe whose window it arrives in).
func (pl ProbeLog) SustainedConflicts() ProbeLog {
	var out ProbeLog
	double := func(i int) bool { return i >= 0 && i < len(pl) && answeredByTwo(pl[i]) }
	for i := range pl {
		if double(i) && (double(i-1) || double(i+1)) {
			out = append(out, pl[i])
		}
	}
	return out
}

// LongestConflict is the longest run of consecutive probes answered by
// more than one node: from the first one's send time to the send time of
// the probe after the run (or of its last probe), and how many it held.
func (pl ProbeLog) LongestConflict() (time.Duration, int) {
	return pl.longestRun(answeredByTwo)
}

// answeredByTwo says whether more than one node answered p.
func answeredByTwo(p Probe) bool { return len(p.Nodes()) > 1 }

// LongestConflictStall is the longest any answer took within the longest
// run of probes answered by more than one node (0 when there is none): as
// the client saw it, how long a node answering in that run went without
// reading its requests. A node has to run to stop answering, so a run a
// stalled speaker causes lasts about that long.
func (pl ProbeLog) LongestConflictStall() time.Duration {
	_, n, at := pl.longestRunAt(answeredByTwo)
	if at < 0 {
		return 0
	}
	var worst time.Duration
	for _, p := range pl[at : at+n] {
		for _, a := range p.Answers {
			worst = max(worst, a.At.Sub(p.Sent))
		}
	}
	return worst
}
