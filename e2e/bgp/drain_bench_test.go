package bgp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// drainSequence is one way of taking a node out: with or without
// `kubectl herald drain` first, then kubectl drain, then the node shut
// down gracefully (its speaker gets SIGTERM, as from the kubelet's
// graceful node shutdown, and the node's cable goes once it has exited)
// or powered off (the cable goes and the speaker is killed at once).
type drainSequence struct {
	name     string
	herald   bool
	poweroff bool
}

var drainSequences = []drainSequence{
	{name: "kubectl-drain+shutdown"},
	{name: "herald-drain+kubectl-drain+shutdown", herald: true},
	{name: "kubectl-drain+poweroff", poweroff: true},
	{name: "herald-drain+kubectl-drain+poweroff", herald: true, poweroff: true},
}

// drainFigures are one sequence's figures for one address.
type drainFigures struct {
	served
	// moved is how long after the step named by movedBy the address
	// stopped leading to the drained node (0: it did not within 30 s).
	moved   time.Duration
	movedBy string
}

// BenchmarkBGPDrain: a BGP address (the external client, through the
// router) and an L2 address (the client on the segment), each asked by
// a new HTTP connection every 20 ms (50 a second), while the node
// answering for the L2 address is taken out by each of drainSequences;
// for each sequence and address: failed requests, the longest gap
// between two answered requests, and how long after which step the
// address left the node. The sequences are printed side by side (no
// assertion: TestDrainDropsNothing asserts the Herald drain).
func BenchmarkBGPDrain(b *testing.B) {
	for range b.N {
		l, h := suite.Herald(b)
		sc := newDrainScene(b, l, h, "drainbench")
		var rows [][2]drainFigures
		for _, seq := range drainSequences {
			b.Run(seq.name, func(b *testing.B) {
				sc = healDrain(b, l, h, sc)
				f := runDrainSequence(b, l, h, sc, seq)
				rows = append(rows, f)
				for i, fam := range []string{"bgp", "l2"} {
					b.ReportMetric(float64(f[i].failed), fam+"-failed")
					b.ReportMetric(float64(f[i].gap.Milliseconds()), fam+"-gap-ms")
					b.ReportMetric(float64(f[i].moved.Milliseconds()), fam+"-move-ms")
				}
			})
		}
		b.Logf("drain side by side (50 new connections a second to each address):\n%s", drainTable(rows))
	}
}

// drainTable prints the sequences' figures as one table.
func drainTable(rows [][2]drainFigures) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-38s %-4s %12s %12s  %s\n", "sequence", "addr", "failed/sent", "longest gap", "moved")
	for i, r := range rows {
		for j, fam := range []string{"BGP", "L2"} {
			name := drainSequences[i].name
			if j > 0 {
				name = ""
			}
			f := r[j]
			moved := "not within 30 s"
			if f.movedBy != "" {
				moved = fmt.Sprintf("%v after %s", f.moved.Round(10*time.Millisecond), f.movedBy)
			}
			fmt.Fprintf(&sb, "%-38s %-4s %12s %12v  %s\n", name, fam, fmt.Sprintf("%d/%d", f.failed, f.sent), f.gap.Round(time.Millisecond), moved)
		}
	}
	return sb.String()
}

// healDrain undoes a sequence (label, cordon, cable, speaker) and waits
// until both addresses are served by every node again; the node to drain
// next is the L2 address's owner then.
func healDrain(b *testing.B, l *lab.Lab, h *deploy.Herald, sc drainScene) drainScene {
	b.Helper()
	ctx := context.Background()
	for _, n := range allNodes(l) {
		if err := l.RemoveNodeLabel(ctx, n, v1beta1.LabelDrain); err != nil {
			b.Fatal(err)
		}
		if err := l.Uncordon(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	suite.Herald(b)
	sc.waitEndpoints(b, l)
	waitFIB(b, l, host(sc.bgp), allNodes(l)...)
	return sc.retarget(b, l)
}

// step is one command of a sequence and when it started.
type step struct {
	name string
	at   time.Time
}

// runDrainSequence runs seq on the scene's victim under the two clients
// and returns the BGP and the L2 address's figures.
func runDrainSequence(b *testing.B, l *lab.Lab, h *deploy.Herald, sc drainScene, seq drainSequence) [2]drainFigures {
	b.Helper()
	ctx := context.Background()
	c := sc.startClients(b, l)
	warm := time.Now().Add(time.Second)
	labkit.Eventually(b, 5*time.Second, "a second of requests before the drain", func() bool { return time.Now().After(warm) })
	start := time.Now()
	mw := sc.watchMoves(l)
	var steps []step
	do := func(name string, f func() error) {
		steps = append(steps, step{name, time.Now()})
		if err := f(); err != nil {
			b.Fatalf("%s: %s: %v", seq.name, name, err)
		}
	}
	if seq.herald {
		do("kubectl herald drain", func() error {
			r, err := l.KubectlHerald(ctx, "drain", "--timeout", "2m", sc.victim)
			if err == nil && r.Code != 0 {
				err = fmt.Errorf("exit %d: %s", r.Code, r.Stderr)
			}
			b.Logf("%s: kubectl herald drain %s:\n%s", seq.name, sc.victim, r.Stdout)
			return err
		})
	}
	do("kubectl drain", func() error { return l.Drain(ctx, sc.victim) })
	if seq.poweroff {
		do("power-off", func() error {
			if err := l.SetLink(ctx, sc.victim, false); err != nil {
				return err
			}
			return h.Speakers[sc.victim].Kill()
		})
	} else {
		do("shutdown", func() error {
			if err := h.Speakers[sc.victim].Stop(); err != nil {
				return err
			}
			return l.SetLink(ctx, sc.victim, false)
		})
	}
	bgpGone, l2Moved, l2To := mw.wait(30 * time.Second)
	// the clients run 2 s past the last step or move, whichever is later
	end := steps[len(steps)-1].at
	for _, t := range []time.Time{bgpGone, l2Moved} {
		if t.After(end) {
			end = t
		}
	}
	end = end.Add(2 * time.Second)
	labkit.Eventually(b, 40*time.Second, "the clients' last 2 s", func() bool { return time.Now().After(end) })
	f := [2]drainFigures{{served: summarize(c.bgp.Tries(b), start)}, {served: summarize(c.l2.Tries(b), start)}}
	f[0].moved, f[0].movedBy = movedAfter(steps, bgpGone)
	f[1].moved, f[1].movedBy = movedAfter(steps, l2Moved)
	b.Logf("%s on %s: BGP %s: %v, moved %v after %s; L2 %s: %v, moved to %s %v after %s", seq.name, sc.victim,
		sc.bgp, f[0].served, f[0].moved.Round(time.Millisecond), f[0].movedBy, sc.l2, f[1].served, l2To, f[1].moved.Round(time.Millisecond), f[1].movedBy)
	for i, what := range []string{"BGP", "L2"} {
		if len(f[i].errors) > 0 {
			b.Logf("%s: %s failures: %s", seq.name, what, strings.Join(f[i].errors, "; "))
		}
	}
	return f
}

// movedAfter names the last step begun before at and how long before at
// it began ("" when at is zero: the address did not move).
func movedAfter(steps []step, at time.Time) (time.Duration, string) {
	if at.IsZero() {
		return 0, ""
	}
	last := steps[0]
	for _, s := range steps {
		if !s.at.After(at) {
			last = s
		}
	}
	return at.Sub(last.at), last.name
}
