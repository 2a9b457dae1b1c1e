package l2

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// TestRestartedNonOwnerNeverClaims restarts (SIGKILL, start again) a
// speaker that does not own the address, several times, and checks it
// never answers or sends a gratuitous ARP for it while its view of the
// others settles (MetalLB's restarting speaker claimed the VIP in 4 of 13
// restarts here).
func TestRestartedNonOwnerNeverClaims(t *testing.T) {
	l, h := herald(t)
	ctx := context.Background()
	_, ips := service(t, l, "restart-non-owner", nil, "node1", "node2", "node3")
	vip := ips[0]
	own := owner(t, l, vip)
	var other string
	for _, n := range l.Nodes() {
		if n.Name != own {
			other = n.Name
			break
		}
	}
	for i := 0; i < 5; i++ {
		watch, err := l.WatchGratuitous()
		if err != nil {
			t.Fatal(err)
		}
		mon, err := l.StartARPMonitor(vip, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := h.Speakers[other].Kill(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.StartSpeaker(other); err != nil {
			t.Fatal(err)
		}
		// observe through the restart and well past the settling
		_, _ = mon.Wait(ctx, start.Add(3*time.Second), func(lab.Probe) bool { return true })
		probes, _ := mon.Stop()
		announced, _ := watch.Stop()
		for _, p := range probes.After(start) {
			for _, n := range p.Nodes() {
				if n == other {
					t.Fatalf("restart %d: the restarting non-owner %s answered for %s at +%v", i, other, vip, p.Sent.Sub(start).Round(time.Millisecond))
				}
			}
		}
		if g, ok := announced.First(vip, other, start); ok {
			t.Fatalf("restart %d: the restarting non-owner %s sent a gratuitous ARP for %s at +%v", i, other, vip, g.At.Sub(start))
		}
		checkServed(t, fmt.Sprintf("restart %d of the non-owner %s", i, other), probes.After(start))
	}
}

// TestRestartedOwnerTakesBackWithoutGap kills the owner, lets another node
// take over, restarts it and checks the address moves back (or stays)
// with no unanswered probe.
func TestRestartedOwnerTakesBackWithoutGap(t *testing.T) {
	l, h := herald(t)
	ctx := context.Background()
	_, ips := service(t, l, "restart-owner", nil, "node1", "node2", "node3")
	vip := ips[0]
	own := owner(t, l, vip)
	if err := h.Speakers[own].Kill(); err != nil {
		t.Fatal(err)
	}
	lab.Poll(t, "another node answering", 30*time.Second, func() bool {
		a := probe(t, l, vip)
		return len(a) == 1 && a[0].Node != own
	})
	mon, err := l.StartARPMonitor(vip, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := h.StartSpeaker(own); err != nil {
		t.Fatal(err)
	}
	_, _ = mon.Wait(ctx, start.Add(4*time.Second), func(lab.Probe) bool { return true })
	probes, _ := mon.Stop()
	after := probes.After(start)
	last := after[len(after)-1]
	t.Logf("after the owner %s came back, %v answers; %d probes unanswered, %d answered twice", own, last.Nodes(), len(after.Unanswered()), len(after.Conflicts()))
	checkServed(t, "the owner "+own+" coming back", after)
}
