package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
)

// TestRestartedNonOwnerNeverClaims restarts (SIGKILL, start again) a
// speaker that does not own the address, several times, and checks it
// never answers or sends a gratuitous ARP for it while its view of the
// others settles (MetalLB's restarting speaker claimed the VIP in 4 of 13
// restarts here).
func TestRestartedNonOwnerNeverClaims(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "restart-non-owner", poolL2, nil, "node1", "node2", "node3")
	vip := ips[0]
	own := harness.Owner(t, l, vip)
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
		lab.CheckServed(t, fmt.Sprintf("restart %d of the non-owner %s", i, other), probes.After(start), lab.Steady())
	}
}

// TestRestartedOwnerTakesBackWithoutGap kills (SIGKILL) the owner of some
// of 12 addresses (IPv4 and IPv6); the kubelet restarts it, often within
// a second, and it takes its addresses back from the nodes that took them
// over. The probes run from before the kill, so that a take-over shorter
// than a poll is seen too. The take-over after the kill is a failover (no
// speaker answers until the others find the owner dead: TestAbruptFailover
// bounds that); from the first answer of another node on, each address is
// held to the targets of a hand-over (checkHandOverProbes). An address the
// restarted speaker is back on before anyone took it over was never
// handed over: its gap is the failure's, and only logged.
func TestRestartedOwnerTakesBackWithoutGap(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	vips := services(t, l, "restart-owner", 6)
	own := harness.Owner(t, l, vips[0])
	for _, vip := range vips {
		harness.Owner(t, l, vip)
	}
	mons := monitorEvery(t, l, vips, probeRound)
	controls, cmons := startControls(t, l)
	kill := time.Now()
	if err := h.Speakers[own].Kill(); err != nil {
		stopMonitors(mons)
		stopMonitors(cmons)
		t.Fatal(err)
	}
	if _, err := h.StartSpeaker(own); err != nil {
		stopMonitors(mons)
		stopMonitors(cmons)
		t.Fatal(err)
	}
	t.Logf("%s's speaker killed, Ready again %v later", own, time.Since(kill).Round(time.Millisecond))
	_, _ = mons[0].Wait(ctx, time.Now().Add(4*time.Second), func(lab.Probe) bool { return true })
	before := stopAfter(t, mons, time.Time{})
	logs := make([]lab.ProbeLog, len(vips))
	for i, pl := range before {
		logs[i] = pl.After(kill)
		if last, ok := lastAnswered(pl.Between(time.Time{}, kill)); !ok || !slices.Contains(last.Nodes(), own) {
			continue // not the killed node's: held to the targets from the kill on
		}
		took, ok := firstAnsweredByAnother(logs[i], own)
		if !ok {
			gap, n := logs[i].LongestGap()
			t.Logf("%s: %s's speaker was back before anyone took it over (unanswered for %v, %d probes: a failure, not a hand-over)", vips[i], own, gap.Round(time.Millisecond), n)
			logs[i] = nil
			continue
		}
		t.Logf("%s taken over by %v %v after the kill", vips[i], took.Nodes(), took.Sent.Sub(kill).Round(time.Millisecond))
		logs[i] = logs[i].After(took.Sent)
	}
	var handed []netip.Addr
	var handedLogs []lab.ProbeLog
	for i, pl := range logs {
		if pl != nil {
			handed, handedLogs = append(handed, vips[i]), append(handedLogs, pl)
		}
	}
	checkHandOverProbes(t, "the owner "+own+" coming back", handed, handedLogs, controls, stopAfter(t, cmons, kill))
}

// lastAnswered is the last answered probe of pl.
func lastAnswered(pl lab.ProbeLog) (lab.Probe, bool) {
	for i := len(pl) - 1; i >= 0; i-- {
		if pl[i].Answered() {
			return pl[i], true
		}
	}
	return lab.Probe{}, false
}

// firstAnsweredByAnother is the first probe of pl answered by a node other
// than node.
func firstAnsweredByAnother(pl lab.ProbeLog, node string) (lab.Probe, bool) {
	for _, p := range pl {
		if slices.ContainsFunc(p.Nodes(), func(n string) bool { return n != node }) {
			return p, true
		}
	}
	return lab.Probe{}, false
}
