package layer2

import (
	"fmt"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// handoverLab: node1 and node2 (announcers, IPv6 DAD on) and a client that
// probes labVIP4 and labVIP6 continuously from rotating sources. Each node
// keeps a VIP of its own of each family, so its responders stay open, as
// on a node that announces other Services.
type handoverLab struct {
	*lab
	t      testing.TB
	client string
	cli    *helper
	ann    [2]*helper
	macs   [2]string
	base   [2][]string
}

// handoverGrat is the announcers' gratuitous burst: short enough that a
// node's burst is still in progress when the next round releases the VIP.
const handoverGrat = "HERALD_L2_GRAT=6/50ms"

func newHandoverLab(t testing.TB) *handoverLab {
	l := newLab(t)
	h := &handoverLab{lab: l, t: t, macs: [2]string{macNode1, macNode2}}
	h.base = [2][]string{{"198.51.100.81", "2001:db8:1::81"}, {"198.51.100.82", "2001:db8:1::82"}}
	nodes := [2]string{
		l.addHost("node1", macNode1, true, "198.51.100.11/25", "2001:db8:1::11/64"),
		l.addHost("node2", macNode2, true, "198.51.100.12/25", "2001:db8:1::12/64"),
	}
	h.client = l.addProbingClient()
	h.cli = startHelper(t, h.client, "client")
	h.cli.expect("ready")
	for i, ns := range nodes {
		h.ann[i] = startHelper(t, ns, "announcer", handoverGrat, "HERALD_L2_LOG=info")
		m := h.cli.mark()
		h.ann[i].set(h.base[i]...)
		// The NDP responder waits for the link-local address to pass DAD.
		h.cli.waitFrame(m, 10*time.Second, "node's NDP responder ready", isUnsolicitedNA(h.macs[i], h.base[i][1]))
	}
	for i := range 2 {
		labkit.Eventually(t, 5*time.Second, "base bursts over", func() bool {
			return h.ann[i].metric("herald_l2_gratuitous_sent_total", "eth0", protoARP) == 6 &&
				h.ann[i].metric("herald_l2_gratuitous_sent_total", "eth0", protoNDP) == 6
		})
	}
	return h
}

// with returns node i's own VIPs and more.
func (h *handoverLab) with(i int, more ...string) []string {
	return append(append([]string(nil), h.base[i]...), more...)
}

// startProbing starts the client's probes and waits until both VIPs are
// answered by node i.
func (h *handoverLab) startProbing(i int) {
	m := h.cli.mark()
	if r := h.cli.call("probeall %s %s 2ms", labVIP4, labVIP6); r != "probing" {
		h.t.Fatalf("client: %q", r)
	}
	h.waitAnswers(m, i, 1)
}

// waitAnswers waits for n answers from node i to probes for each VIP, seen
// after mark m.
func (h *handoverLab) waitAnswers(m frameMark, i, n int) {
	h.t.Helper()
	mac := h.macs[i]
	labkit.Eventually(h.t, 10*time.Second, fmt.Sprintf("%d answers from %s", n, mac), func() bool {
		frames := h.cli.framesSince(m)
		return countFrames(frames, func(f frame) bool {
			return f.Kind == "arp-reply" && f.Src == mac && f.SPA == labVIP4 && f.Dst == macClient
		}) >= n && countFrames(frames, func(f frame) bool {
			return f.Kind == "na" && f.Src == mac && f.Target == labVIP6 && f.Solicited
		}) >= n
	})
}

// stopProbingAfter is stopProbing, keeping the probes sent after from.
func (h *handoverLab) stopProbingAfter(from time.Time) []*probeResult {
	var after []*probeResult
	for _, p := range h.stopProbing() {
		if p.t.After(from) {
			after = append(after, p)
		}
	}
	return after
}

// stopProbing stops the probes and returns them with their answers, once
// every probe is answered or 5 s have passed.
func (h *handoverLab) stopProbing() []*probeResult {
	if r := h.cli.call("stop"); r != "stopped" {
		h.t.Fatalf("client: %q", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		probes := matchProbes(h.cli.framesSince(frameMark{}), labVIP4, labVIP6)
		if allAnswered(probes) || time.Now().After(deadline) {
			return probes
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handoverRound is one hand-over of both VIPs from node old to node nw.
type handoverRound struct {
	old, nw   int
	released  time.Time // just before old's SetAnnouncements with Releasing
	announced time.Time // just before nw's SetAnnouncements
	yields    [2]yieldEvent
}

// handOver moves both VIPs from node old to the other node the way the
// speaker does (old releasing, new owner announcing, old dropping the VIPs
// on OnYield) and checks, with no timing assumption, that old sent no
// gratuitous packet once releasing and no answer once it had yielded.
func (h *handoverLab) handOver(old int) handoverRound {
	h.t.Helper()
	nw := 1 - old
	r := handoverRound{old: old, nw: nw}
	from := len(h.ann[old].yieldsSeen())
	r.released, _ = h.ann[old].setTimed(h.with(old, "~"+labVIP4, "~"+labVIP6)...)
	grat := h.counters(old, "herald_l2_gratuitous_sent_total")
	r.announced = h.ann[nw].set(h.with(nw, labVIP4, labVIP6)...)
	for k, vip := range []string{labVIP4, labVIP6} {
		r.yields[k] = h.ann[old].waitYield(from, vip)
		if y := r.yields[k]; y.iface != "eth0" || y.by != h.macs[nw] {
			h.t.Errorf("OnYield(%s, %s, %s), want interface eth0 and %s", y.vip, y.iface, y.by, h.macs[nw])
		}
	}
	// Every answer old sent before yielding is counted by now (the read
	// loop yields after answering what it read earlier).
	answers := h.counters(old, "herald_l2_responses_sent_total")
	h.waitAnswers(h.cli.mark(), nw, 10)
	if got := h.counters(old, "herald_l2_responses_sent_total"); got != answers {
		h.t.Errorf("node%d answered after it yielded: responses %v, then %v", old+1, answers, got)
	}
	if got := h.counters(old, "herald_l2_gratuitous_sent_total"); got != grat {
		h.t.Errorf("node%d sent gratuitous packets while releasing: %v, then %v", old+1, grat, got)
	}
	h.ann[old].set(h.base[old]...)
	return r
}

// counters returns a counter of node i for ARP and NDP on eth0.
func (h *handoverLab) counters(i int, name string) [2]float64 {
	return [2]float64{h.ann[i].metric(name, "eth0", protoARP), h.ann[i].metric(name, "eth0", protoNDP)}
}

// handoverReport summarises rounds of hand-over from the client's view.
type handoverReport struct {
	probeCounts
	// lastOldAfterGrat is, per round and protocol, the time from the new
	// owner's first gratuitous packet to the old owner's last answer, as
	// the client saw them (negative: the old owner's last answer came
	// first).
	lastOldAfterGrat []time.Duration
	// firstNewAfterGrat is the time from the new owner's first gratuitous
	// packet to its first answer.
	firstNewAfterGrat []time.Duration
	// doubleBeforeGrat is, for each probe answered by both nodes, how long
	// before the nearest new owner's first gratuitous packet the client
	// sent it.
	doubleBeforeGrat []time.Duration
	// late are the probes the old owner answered although the client sent
	// them well after it saw the new owner's first gratuitous packet.
	late []string
}

// lateAfter is how long after the new owner's gratuitous packet reached
// the client a probe it sends must reach the old owner after that packet
// too: only the time for one frame to cross the bridge is needed, this is
// a wide margin.
const lateAfter = 5 * time.Millisecond

func (h *handoverLab) report(rounds []handoverRound, probes []*probeResult) handoverReport {
	rep := handoverReport{probeCounts: countProbes(probes)}
	frames := h.cli.framesSince(frameMark{})
	grats := map[string][]time.Time{}
	for i, r := range rounds {
		// The old owner of this round is the new owner of the next one:
		// its answers from then on belong to that round.
		next := time.Now()
		if i+1 < len(rounds) {
			next = rounds[i+1].announced
		}
		for _, proto := range []string{protoARP, protoNDP} {
			grat := isGARP(h.macs[r.nw], labVIP4)
			if proto == protoNDP {
				grat = isUnsolicitedNA(h.macs[r.nw], labVIP6)
			}
			g := firstFrame(frames, func(f frame) bool { return !f.time().Before(r.announced) && grat(f) })
			if g.T == 0 {
				h.t.Errorf("round %d %s: no gratuitous packet from the new owner", i, proto)
				continue
			}
			grats[proto] = append(grats[proto], g.time())
			rep.add(h, r, proto, g.time(), probes, next)
		}
	}
	for _, p := range rep.doubles {
		rep.doubleBeforeGrat = append(rep.doubleBeforeGrat, nearest(grats[p.proto], p.t).Sub(p.t))
	}
	return rep
}

// add accounts for one round and protocol whose new owner's first
// gratuitous packet the client saw at g; the round ends when the next one
// announces.
func (rep *handoverReport) add(h *handoverLab, r handoverRound, proto string, g time.Time, probes []*probeResult, next time.Time) {
	oldMAC, newMAC := h.macs[r.old], h.macs[r.nw]
	var lastOld, firstNew time.Time
	for _, p := range probes {
		if p.proto != proto {
			continue
		}
		if t, ok := p.by[oldMAC]; ok && t.Before(next) {
			if t.After(lastOld) {
				lastOld = t
			}
			if p.t.Sub(g) > lateAfter {
				rep.late = append(rep.late, fmt.Sprintf("%s probe from %s sent %v after %s's gratuitous, answered by %s %v later",
					proto, p.src, p.t.Sub(g), newMAC, oldMAC, t.Sub(p.t)))
			}
		}
		if t, ok := p.by[newMAC]; ok && !p.t.Before(r.released) && (firstNew.IsZero() || t.Before(firstNew)) {
			firstNew = t
		}
	}
	if !lastOld.IsZero() {
		rep.lastOldAfterGrat = append(rep.lastOldAfterGrat, lastOld.Sub(g))
	}
	if !firstNew.IsZero() {
		rep.firstNewAfterGrat = append(rep.firstNewAfterGrat, firstNew.Sub(g))
	}
}

// nearest returns the time in ts closest to t.
func nearest(ts []time.Time, t time.Time) time.Time {
	var best time.Time
	for _, x := range ts {
		if best.IsZero() || x.Sub(t).Abs() < best.Sub(t).Abs() {
			best = x
		}
	}
	return best
}

func firstFrame(frames []frame, pred func(frame) bool) frame {
	for _, f := range frames {
		if pred(f) {
			return f
		}
	}
	return frame{}
}

func (rep handoverReport) String() string {
	stats := func(ds []time.Duration) string {
		lo, med, hi := durationStats(ds)
		return fmt.Sprintf("min %v median %v max %v", lo, med, hi)
	}
	return fmt.Sprintf("%d probes, %d unanswered, %d answered by both nodes (sent before the new owner's first gratuitous packet by %s); "+
		"new owner's first gratuitous -> old owner's last answer: %s; -> new owner's first answer: %s",
		rep.probes, rep.unanswered, rep.double, stats(rep.doubleBeforeGrat), stats(rep.lastOldAfterGrat), stats(rep.firstNewAfterGrat))
}

// runHandovers owns both VIPs on node1, then hands them over n times back
// and forth under continuous probes.
func runHandovers(t testing.TB, h *handoverLab, n int) handoverReport {
	m := h.cli.mark()
	h.ann[0].set(h.with(0, labVIP4, labVIP6)...)
	h.cli.waitFrame(m, 5*time.Second, "node1's unsolicited NA", isUnsolicitedNA(macNode1, labVIP6))
	h.startProbing(0)
	var rounds []handoverRound
	for i := range n {
		rounds = append(rounds, h.handOver(i%2))
	}
	probes := h.stopProbing()
	return h.report(rounds, probes)
}

// TestLabHandover hands labVIP4 and labVIP6 over between two nodes 20 times
// while the client sends an ARP request and a neighbour solicitation every
// 2 ms. Each round checks that the old owner's OnYield fires for both VIPs,
// that it answers nothing after it and sends no gratuitous packet once
// releasing (its previous burst, 6 x 50 ms, is usually still in progress).
// Over all rounds: no probe goes unanswered, and the old owner answers no
// probe sent after the new owner's announcement reached the client.
//
// Probes answered by both nodes are counted, not failed: a request that
// reaches both nodes just before the new owner's first gratuitous packet is
// answered by the old owner (it reads it before that packet) and, when the
// new owner's read loop wakes only after its switch, by the new owner too.
// The window is the new owner's wake-up latency, a few hundred µs at most
// on the 2-core lab machine; BenchmarkLabHandover measures it.
func TestLabHandover(t *testing.T) {
	h := newHandoverLab(t)
	rep := runHandovers(t, h, 20)
	t.Log(rep)
	if rep.unanswered > 0 {
		for _, p := range rep.unansweredProbes {
			t.Errorf("%s probe from %s at %s unanswered", p.proto, p.src, p.t.Format("15:04:05.000000"))
		}
	}
	for _, l := range rep.late {
		t.Error(l)
	}
	for i := range 2 {
		if v := h.counters(i, "herald_l2_handovers_total"); v != [2]float64{10, 10} {
			t.Errorf("node%d herald_l2_handovers_total{arp,ndp} = %v, want 10 each", i+1, v)
		}
	}
}

// BenchmarkLabHandover reports, over b.N hand-overs, the probes unanswered
// and answered by both nodes, and the time from the new owner's first
// gratuitous packet to the old owner's last answer (median, µs).
func BenchmarkLabHandover(b *testing.B) {
	h := newHandoverLab(b)
	b.ResetTimer()
	rep := runHandovers(b, h, b.N)
	b.StopTimer()
	_, med, hi := durationStats(rep.lastOldAfterGrat)
	n := float64(b.N)
	b.ReportMetric(float64(rep.probes)/n, "probes/op")
	b.ReportMetric(float64(rep.unanswered)/n, "unanswered/op")
	b.ReportMetric(float64(rep.double)/n, "double-answered/op")
	b.ReportMetric(float64(len(rep.late))/n, "late-old-answers/op")
	b.ReportMetric(float64(med.Microseconds()), "µs-grat-to-last-old-answer-median")
	b.ReportMetric(float64(hi.Microseconds()), "µs-grat-to-last-old-answer-max")
	b.Log(rep)
	for _, l := range rep.late {
		b.Log(l)
	}
}
