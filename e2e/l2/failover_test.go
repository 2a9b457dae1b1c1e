package l2

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// failover is what one owner loss looked like from the client.
type failover struct {
	oldOwner, newOwner  string
	gratuitous, answer  time.Duration // event -> first gratuitous ARP / first answered probe from the new owner
	unanswered, doubled int           // probes after the event
	probes              lab.ProbeLog  // after the event
}

// abruptFailover kills the owner's speaker (SIGKILL) and takes its link
// down, then measures the take-over; the link and speaker are restored.
func abruptFailover(t testing.TB, l *lab.Lab, h *deploy.Herald, vip netip.Addr) failover {
	return measureFailover(t, l, h, vip, func(owner string) error {
		if err := h.Speakers[owner].Kill(); err != nil {
			return err
		}
		return l.SetLink(context.Background(), owner, false)
	})
}

// gracefulFailover sends SIGTERM to the owner's speaker.
func gracefulFailover(t testing.TB, l *lab.Lab, h *deploy.Herald, vip netip.Addr) failover {
	return measureFailover(t, l, h, vip, func(owner string) error { return h.Speakers[owner].Stop() })
}

func measureFailover(t testing.TB, l *lab.Lab, h *deploy.Herald, vip netip.Addr, event func(owner string) error) failover {
	t.Helper()
	ctx := context.Background()
	var f failover
	f.oldOwner = harness.Owner(t, l, vip)
	watch, err := l.WatchGratuitous()
	if err != nil {
		t.Fatal(err)
	}
	mon, err := l.StartARPMonitor(vip, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mon.Wait(ctx, time.Time{}, lab.Probe.Answered); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := event(f.oldOwner); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	taken, err := mon.Wait(waitCtx, at, func(p lab.Probe) bool { return p.Answered() && p.Nodes()[0] != f.oldOwner })
	if err != nil {
		t.Fatalf("no other node took %s over after the owner %s went: %v", vip, f.oldOwner, err)
	}
	// watch a little longer for double answers after the take-over
	_, _ = mon.Wait(ctx, taken.Sent.Add(300*time.Millisecond), func(lab.Probe) bool { return true })
	probes, err := mon.Stop()
	if err != nil {
		t.Fatal(err)
	}
	announced, err := watch.Stop()
	if err != nil {
		t.Fatal(err)
	}
	f.newOwner = taken.Nodes()[0]
	f.answer = taken.Sent.Sub(at)
	if g, ok := announced.First(vip, f.newOwner, at); ok {
		f.gratuitous = g.At.Sub(at)
	}
	after := probes.After(at)
	f.probes = after
	f.unanswered = len(after.Unanswered())
	f.doubled = len(after.Conflicts())
	// The Service's condition names the node that took over, from its
	// SpeakerStatus (the dead speaker's report stays until its Lease
	// expires; the newer claim is the one named), unless a SIGTERMed old
	// owner is back already.
	waitAnnouncedByNewOwner(t, l, vip, f.newOwner, f.oldOwner)
	restore(t, l, h, f.oldOwner)
	// the old owner still ranks first for the address: wait until it has
	// taken it back, so the next measurement starts from a settled state
	labkit.Eventually(t, 30*time.Second, f.oldOwner+" answering again", func() bool {
		a := harness.Probe(t, l, vip)
		return len(a) == 1 && a[0].Node == f.oldOwner
	})
	return f
}

// restore brings the old owner's link and speaker back.
func restore(t testing.TB, l *lab.Lab, h *deploy.Herald, node string) {
	t.Helper()
	if err := l.SetLink(context.Background(), node, true); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartSpeaker(node); err != nil {
		t.Fatal(err)
	}
}

func TestAbruptFailover(t *testing.T) {
	l, h := suite.Herald(t)
	_, ips := suite.Service(t, "abrupt", poolL2, nil, "node1", "node2", "node3")
	f := abruptFailover(t, l, h, ips[0])
	t.Logf("%s killed + link down: %s sent gratuitous ARP after %v, first answer after %v, %d probes unanswered",
		f.oldOwner, f.newOwner, f.gratuitous.Round(time.Millisecond), f.answer.Round(time.Millisecond), f.unanswered)
	if f.gratuitous == 0 {
		t.Error("the new owner sent no gratuitous ARP")
	}
	if f.doubled > 0 {
		t.Errorf("%d probes answered by two nodes", f.doubled)
	}
}

func TestGracefulHandOverNoGapNoDoubleAnswer(t *testing.T) {
	l, h := suite.Herald(t)
	_, ips := suite.Service(t, "graceful", poolL2, nil, "node1", "node2", "node3")
	for i := 0; i < 3; i++ {
		f := gracefulFailover(t, l, h, ips[0])
		t.Logf("SIGTERM %s: %s took over (gratuitous ARP after %v); %d unanswered, %d answered twice",
			f.oldOwner, f.newOwner, f.gratuitous.Round(time.Millisecond), f.unanswered, f.doubled)
		lab.CheckServed(t, fmt.Sprintf("hand-over %d", i), f.probes, lab.Steady())
	}
}
