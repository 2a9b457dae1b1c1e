package l2

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// The targets of a hand-over that Herald plans (a rolling update, a
// speaker's restart) are lab.PlannedHandOver, counted in the client's
// probe rounds: no address unanswered for longer than
// lab.PlannedHandOverGap, and at each change of owner at most one round
// answered by two MACs (the round whose requests the old owner answered
// before it read the new owner's gratuitous ARP or unsolicited NA).

// probeRound is how often the client asks who has each address.
const probeRound = 20 * time.Millisecond

// runString is a run of probes as the report prints it: its start, length
// and probes, who answered, and its late answers.
func runString(r lab.Run) string {
	s := fmt.Sprintf("%s %v (%d)", r.At.UTC().Format("15:04:05.000"), r.D.Round(time.Millisecond), r.N)
	if len(r.Nodes) > 0 {
		s += " " + strings.Join(r.Nodes, "+")
	}
	if r.Stall > probeRound {
		s += fmt.Sprintf(", answers up to %v late", r.Stall.Round(time.Millisecond))
	}
	return s
}

// ownerChange is a probe answered by another node than the last one
// answered by one node alone.
type ownerChange struct {
	at       time.Time
	from, to string
}

// ownerChanges lists the changes of owner in pl, counting only probes
// answered by one node.
func ownerChanges(pl lab.ProbeLog) []ownerChange {
	var out []ownerChange
	last := ""
	for _, p := range pl {
		nodes := p.Nodes()
		if len(nodes) != 1 {
			continue
		}
		if last != "" && nodes[0] != last {
			out = append(out, ownerChange{at: p.Sent, from: last, to: nodes[0]})
		}
		last = nodes[0]
	}
	return out
}

// handOverReport is what the client saw of one address through hand-overs.
type handOverReport struct {
	addr     netip.Addr
	changes  []ownerChange
	gaps     []lab.Run // every run of unanswered probes
	overlaps []lab.Run // every run answered by two nodes
	// wait is the longest a client asking at a probe's send time waited
	// for the first answer to arrive (to that probe or a later one),
	// and waitAt that probe's send time: late answers count here, not
	// in gaps.
	wait   time.Duration
	waitAt time.Time
}

func reportHandOvers(addr netip.Addr, pl lab.ProbeLog) handOverReport {
	r := handOverReport{addr: addr, changes: ownerChanges(pl),
		gaps:     pl.Runs(func(p lab.Probe) bool { return !p.Answered() }),
		overlaps: pl.Runs(func(p lab.Probe) bool { return len(p.Nodes()) > 1 })}
	r.wait, r.waitAt = longestWait(pl)
	return r
}

// longestWait is the longest time from a probe's send time to the next
// arrival of any answer (to the last probe's send time when none came),
// and that probe's send time.
func longestWait(pl lab.ProbeLog) (time.Duration, time.Time) {
	var arrivals []time.Time
	for _, p := range pl {
		for _, a := range p.Answers {
			arrivals = append(arrivals, a.At)
		}
	}
	slices.SortFunc(arrivals, time.Time.Compare)
	var worst time.Duration
	var at time.Time
	for _, p := range pl {
		i, _ := slices.BinarySearchFunc(arrivals, p.Sent, time.Time.Compare)
		end := pl[len(pl)-1].Sent
		if i < len(arrivals) {
			end = arrivals[i]
		}
		if d := end.Sub(p.Sent); d > worst {
			worst, at = d, p.Sent
		}
	}
	return worst, at
}

func (r handOverReport) longestGap() time.Duration {
	var d time.Duration
	for _, g := range r.gaps {
		d = max(d, g.D)
	}
	return d
}

func (r handOverReport) longestOverlap() int {
	var n int
	for _, o := range r.overlaps {
		n = max(n, o.N)
	}
	return n
}

func (r handOverReport) overlapRounds() int {
	var n int
	for _, o := range r.overlaps {
		n += o.N
	}
	return n
}

// String is one line per address: its changes of owner, its gaps longer
// than a round and its overlaps, each with the UTC time it started.
func (r handOverReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d changes of owner, longest gap %v, %d rounds answered by two (longest run %d), longest wait for an answer %v (at %s)",
		r.addr, len(r.changes), r.longestGap().Round(time.Millisecond), r.overlapRounds(), r.longestOverlap(),
		r.wait.Round(time.Millisecond), r.waitAt.UTC().Format("15:04:05.000"))
	for _, c := range r.changes {
		fmt.Fprintf(&b, "\n    owner %s -> %s at %s", c.from, c.to, c.at.UTC().Format("15:04:05.000"))
	}
	for _, g := range r.gaps {
		if g.D > probeRound {
			fmt.Fprintf(&b, "\n    gap %s", runString(g))
		}
	}
	for _, o := range r.overlaps {
		fmt.Fprintf(&b, "\n    two answered %s", runString(o))
	}
	return b.String()
}

// startControls probes, beside the handed-over addresses and by the same
// client at the same rate, addresses that no hand-over moves: the nodes'
// own (their kernels answer: a gap there is the client's, the network's
// or the machine's), and one address per node answered by a user-space
// process in the node's CPU cgroup, beside its pods (lab.StartResponder:
// a late answer there is the machine's CPU starvation, as a speaker's
// would be). It returns the addresses and their monitors; the responders
// stop when the test ends.
func startControls(t *testing.T, l *lab.Lab) ([]netip.Addr, []*lab.Monitor) {
	t.Helper()
	var addrs []netip.Addr
	for _, n := range l.Nodes() {
		addrs = append(addrs, n.IPv4)
	}
	addrs = append(addrs, l.Nodes()[0].IPv6)
	for i, n := range l.Nodes() {
		a := userSpaceControl(i)
		r, err := l.StartResponder(n.Name, a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop() })
		addrs = append(addrs, a)
	}
	return addrs, monitorEvery(t, l, addrs, probeRound)
}

// userSpaceControl is the address of node i's user-space control
// (198.51.100.116 on): on the segment, outside the pools, the lab's own
// addresses and hungAddrs.
func userSpaceControl(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 51, 100, byte(116 + i)})
}

// checkHandOvers stops the monitors of vips and of the control addresses
// and checks the probes sent from from on against lab.PlannedHandOver
// beside the controls, logging per address every change of owner, gap
// and overlap with its time, and the same for the controls. Two things
// the lab does are told apart from Herald's hand-overs, and logged as the
// lab's instead of failing the test (lab.ServedBeside):
//   - a gap while a control address went unanswered for longer than
//     lab.PlannedHandOverGap (the client, the network or the machine
//     stalled);
//   - an overlap in which answers came later than that: a speaker not
//     scheduled for that long (the machine's CPU starvation) is
//     declared dead by the member list, another node claims its
//     addresses, and the two answer until it runs again. That is a
//     failover, not a hand-over; the CPU-starved owner has its own tests.
func checkHandOvers(t *testing.T, what string, vips []netip.Addr, mons []*lab.Monitor, controls []netip.Addr, cmons []*lab.Monitor, from time.Time) {
	t.Helper()
	checkHandOverProbes(t, what, vips, stopAfter(t, mons, from), controls, stopAfter(t, cmons, from))
}

// stopAfter stops the monitors and returns each one's probes sent from
// from on.
func stopAfter(t *testing.T, mons []*lab.Monitor, from time.Time) []lab.ProbeLog {
	t.Helper()
	var out []lab.ProbeLog
	for _, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, probes.After(from))
	}
	return out
}

// checkHandOverProbes is checkHandOvers on the probes of each address and
// control, already stopped.
func checkHandOverProbes(t *testing.T, what string, vips []netip.Addr, logs []lab.ProbeLog, controls []netip.Addr, ctl []lab.ProbeLog) {
	t.Helper()
	var labGaps []lab.Run
	for i, pl := range ctl {
		r := reportHandOvers(controls[i], pl)
		t.Logf("%s: control %s", what, r)
		labGaps = append(labGaps, r.gaps...)
	}
	var changes, rounds, starved int
	var longest, wait time.Duration
	for i, pl := range logs {
		r := reportHandOvers(vips[i], pl)
		t.Logf("%s: %s", what, r)
		changes += len(r.changes)
		longest = max(longest, r.longestGap())
		wait = max(wait, r.wait)
		if r.wait > lab.PlannedHandOverGap {
			// Not a test failure: the probes were answered, late. Shown
			// beside what the controls waited at that moment.
			t.Logf("%s: %s waited %v for an answer from %s; the controls waited up to %v within %v of it",
				what, vips[i], r.wait.Round(time.Millisecond), r.waitAt.UTC().Format("15:04:05.000"), controlWait(ctl, r.waitAt).Round(time.Millisecond), controlWindow)
		}
		for _, o := range r.overlaps {
			if o.Stall > lab.PlannedHandOverGap {
				starved += o.N
				t.Logf("%s: %s: the controls' longest gap during the late overlap from %s: %v", what, vips[i], o.At.UTC().Format("15:04:05.000"), longestDuring(labGaps, o))
				continue
			}
			rounds += o.N
		}
		lab.CheckServedBeside(t, fmt.Sprintf("%s, %s", what, vips[i]), pl, ctl, lab.PlannedHandOver())
	}
	t.Logf("%s: %d addresses, %d changes of owner, %d rounds answered by two at hand-overs (%d more while a speaker was starved), longest gap %v, longest wait for an answer %v",
		what, len(vips), changes, rounds, starved, longest.Round(time.Millisecond), wait.Round(time.Millisecond))
}

// controlWindow is how far either side of a late answer the controls'
// waits are looked at: a CPU stall delays different processes at
// slightly different moments.
const controlWindow = 500 * time.Millisecond

// controlWait is the longest the controls waited for an answer to a probe
// sent within controlWindow of at.
func controlWait(ctl []lab.ProbeLog, at time.Time) time.Duration {
	var d time.Duration
	for _, pl := range ctl {
		if w := pl.Between(at.Add(-controlWindow), at.Add(controlWindow)); len(w) > 0 {
			x, _ := longestWait(w)
			d = max(d, x)
		}
	}
	return d
}

// longestDuring is the longest of gaps that overlaps r in time (0: none).
func longestDuring(gaps []lab.Run, r lab.Run) time.Duration {
	var d time.Duration
	for _, c := range gaps {
		if c.Overlaps(r) {
			d = max(d, c.D)
		}
	}
	return d.Round(time.Millisecond)
}

// TestHandOverReport checks the report's arithmetic on a made-up probe
// log (no lab): a hand-over node1 -> node2 with one round answered by
// both, a gap of three rounds, one late answer.
func TestHandOverReport(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ans := func(node string, late time.Duration) func(time.Time) lab.Answer {
		return func(sent time.Time) lab.Answer {
			mac := net.HardwareAddr{2, 0, 0, 0, 0, byte(node[len(node)-1])}
			return lab.Answer{Node: node, MAC: mac, At: sent.Add(late)}
		}
	}
	n1, n2, late := ans("node1", time.Millisecond), ans("node2", time.Millisecond), ans("node2", 150*time.Millisecond)
	rounds := [][]func(time.Time) lab.Answer{{n1}, {n1}, {n1, n2}, {n2}, {}, {}, {}, {n2}, {late}, {n2}}
	var pl lab.ProbeLog
	for i, as := range rounds {
		p := lab.Probe{Seq: i, Sent: t0.Add(time.Duration(i) * probeRound)}
		for _, a := range as {
			p.Answers = append(p.Answers, a(p.Sent))
		}
		pl = append(pl, p)
	}
	r := reportHandOvers(netip.MustParseAddr("198.51.100.64"), pl)
	if len(r.changes) != 1 || r.changes[0].from != "node1" || r.changes[0].to != "node2" || !r.changes[0].at.Equal(pl[3].Sent) {
		t.Errorf("changes %+v, want one node1 -> node2 at probe 3", r.changes)
	}
	if got, want := r.longestGap(), 3*probeRound; got != want || len(r.gaps) != 1 || r.gaps[0].N != 3 {
		t.Errorf("gaps %v (longest %v), want one of 3 rounds, %v", r.gaps, got, want)
	}
	if len(r.overlaps) != 1 || r.overlaps[0].N != 1 || r.longestOverlap() != 1 || r.overlapRounds() != 1 ||
		!slices.Equal(r.overlaps[0].Nodes, []string{"node1", "node2"}) || r.overlaps[0].Stall != time.Millisecond {
		t.Errorf("overlaps %v, want one round node1+node2", r.overlaps)
	}
	// probe 4 waits for probe 7's answer (3 rounds and 1 ms); probe 8's
	// late answer is not waited for, probe 9's comes first
	if want := 3*probeRound + time.Millisecond; r.wait != want || !r.waitAt.Equal(pl[4].Sent) {
		t.Errorf("longest wait %v at %v, want %v at probe 4", r.wait, r.waitAt, want)
	}
	late8 := pl.Runs(func(p lab.Probe) bool { return p.Seq == 8 })
	if len(late8) != 1 || late8[0].Stall != 150*time.Millisecond {
		t.Errorf("run of probe 8 %v, want its answer's 150 ms as stall", late8)
	}
	// the gap of 3 rounds is within PlannedHandOverGap; the overlap one
	// round
	if v := pl.ServedBeside(lab.PlannedHandOver(), nil); len(v.Problems) > 0 {
		t.Errorf("problems %q, want none", v.Problems)
	}
}
