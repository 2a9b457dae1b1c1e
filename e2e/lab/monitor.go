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
	Seq     int
	Sent    time.Time
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
	s, err := l.startStream(Client, "monitor-"+vip.String(), "monitor", "-i", "eth0", "-target", vip.String(), "-interval", interval.String())
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

// matchAnswers gives each burst of answers from one MAC to the probes
// that burst answers. An ARP reply or NA names no request, but a
// responder answers each request once, in the order it reads them: a
// speaker that was not scheduled for 200 ms answers the 20 requests
// queued meanwhile all at once when it runs again, and those probes were
// answered late, not unanswered (the client had its answer, late).
//
// A burst is a MAC's answers that arrived within burstGap of each other,
// whichever probes they were read after (a burst can straddle the next
// probe's send). A burst of k answers, read after probe i:
//   - from a MAC that answered an earlier probe within window: the k
//     oldest probes after that one which the MAC has not answered, sent
//     before the answers arrived: the requests it read first. An old
//     owner starved at a hand-over answers the requests it read before
//     the new owner's announcement, then stops; attributing its late
//     answers to the latest probes would count the new owner's probes as
//     answered twice and the old owner's as unanswered;
//   - from a MAC that answered nothing before: the k latest probes up to
//     i it has not answered, so a new owner's first answers never fill a
//     silence before it.
//
// A single answer stays with the probe it was read after, so a node that
// starts answering after a silence answers none of the probes sent during
// it. Answers no such probe waits for (a second answer to one request)
// stay where they were read. Nothing is answered from more than window
// before.
func matchAnswers(in ProbeLog, window time.Duration) ProbeLog {
	out := make(ProbeLog, len(in))
	for i, p := range in {
		out[i] = Probe{Seq: p.Seq, Sent: p.Sent}
	}
	answeredBy := func(j int, mac string) bool {
		return slices.ContainsFunc(out[j].Answers, func(a Answer) bool { return a.MAC.String() == mac })
	}
	for _, b := range bursts(in) {
		first, last := b.answers[0].At, b.answers[len(b.answers)-1].At
		waits := func(j int) bool { return !answeredBy(j, b.mac) && !out[j].Sent.After(last) }
		var to []int
		if len(b.answers) > 1 {
			prev := -1 // the latest probe this MAC answered, within window
			for j := b.readAfter; j >= 0 && first.Sub(out[j].Sent) <= window; j-- {
				if answeredBy(j, b.mac) {
					prev = j
					break
				}
			}
			if prev >= 0 {
				for j := prev + 1; j <= b.readAfter && len(to) < len(b.answers); j++ {
					if waits(j) {
						to = append(to, j)
					}
				}
			} else {
				for j := b.readAfter; j >= 0 && len(to) < len(b.answers) && first.Sub(out[j].Sent) <= window; j-- {
					if waits(j) {
						to = append(to, j)
					}
				}
				slices.Reverse(to)
			}
		}
		for k, a := range b.answers {
			j := b.reads[k]
			if k < len(to) {
				j = to[k]
			}
			out[j].Answers = append(out[j].Answers, a)
		}
	}
	return out
}

// burstGap is how close a MAC's answers arrive to count as one burst: a
// responder's answers to requests it had queued leave within microseconds
// of each other.
const burstGap = time.Millisecond

// burst is answers from one MAC that arrived together.
type burst struct {
	mac       string
	answers   []Answer
	reads     []int // the probe each answer was read after
	readAfter int   // the probe the last answer was read after
}

// bursts groups the answers of a probe log by MAC and arrival, in order
// of arrival of each burst's first answer.
func bursts(in ProbeLog) []burst {
	type read struct {
		a Answer
		i int
	}
	var all []read
	for i, p := range in {
		for _, a := range p.Answers {
			all = append(all, read{a, i})
		}
	}
	slices.SortStableFunc(all, func(x, y read) int { return x.a.At.Compare(y.a.At) })
	var out []burst
	open := map[string]int{} // MAC -> index in out of its latest burst
	for _, r := range all {
		mac := r.a.MAC.String()
		if k, ok := open[mac]; ok {
			b := &out[k]
			if r.a.At.Sub(b.answers[len(b.answers)-1].At) <= burstGap {
				b.answers, b.reads, b.readAfter = append(b.answers, r.a), append(b.reads, r.i), r.i
				continue
			}
		}
		open[mac] = len(out)
		out = append(out, burst{mac: mac, answers: []Answer{r.a}, reads: []int{r.i}, readAfter: r.i})
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
	return Probe{Seq: p.Seq, Sent: time.Unix(0, p.Sent), Answers: m.lab.answers(p.Answers)}
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
	_, n, at := pl.longestRunAt(func(p Probe) bool { return len(p.Nodes()) > 1 })
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
	double := func(i int) bool { return i >= 0 && i < len(pl) && len(pl[i].Nodes()) > 1 }
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
	return pl.longestRun(func(p Probe) bool { return len(p.Nodes()) > 1 })
}
