package members

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-lb/herald/test/labkit"
)

func TestThreeMembersSeeEachOtherAlive(t *testing.T) {
	names := []string{"node-a", "node-b", "node-c"}
	ms := startCluster(t, names)
	for _, m := range ms {
		labkit.Eventually(t, 5*time.Second, m.name+" to settle", m.Settled)
		snap := m.Snapshot()
		if len(snap) != 3 {
			t.Errorf("%s: snapshot %v, want the 3 nodes", m.name, snap)
		}
		labkit.Eventually(t, 5*time.Second, m.name+" gauge alive=3", func() bool {
			return testutil.ToFloat64(m.metrics.members.WithLabelValues("alive")) == 3
		})
	}
}

func TestCrashIsDetectedAsDead(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b", "node-c"})
	survivors, victim := ms[:2], ms[2]

	crashed := time.Now()
	if err := victim.Shutdown(); err != nil { // no Leave: a crash
		t.Fatal(err)
	}
	for _, m := range survivors {
		waitState(t, m, "node-c", Dead, 10*time.Second)
		t.Logf("%s saw node-c dead %v after the crash", m.name, m.book.since("node-c").Sub(crashed).Round(time.Millisecond))
	}
	sawSuspect := 0
	for _, m := range survivors {
		sawSuspect += len(m.logs.matching("member state changed", "member=node-c", "to=suspect"))
		waitMetrics(t, m, `
# HELP herald_speaker_member_failures_total Nodes declared dead (stopped answering without leaving) as seen by this speaker.
# TYPE herald_speaker_member_failures_total counter
herald_speaker_member_failures_total 1
# HELP herald_speaker_members Nodes this speaker remembers, by member state (alive, suspect, dead, left); includes itself.
# TYPE herald_speaker_members gauge
herald_speaker_members{state="alive"} 2
herald_speaker_members{state="dead"} 1
herald_speaker_members{state="left"} 0
herald_speaker_members{state="suspect"} 0
`)
		if problems, err := testutil.GatherAndLint(m.reg); err != nil || len(problems) > 0 {
			t.Errorf("%s: metric lint: %v %v", m.name, problems, err)
		}
	}
	// The first suspicion of a crashed node always comes from a survivor's
	// own failed probe, which this package sees through memberlist's log
	// line: if memberlist rewords it, this fails.
	if sawSuspect == 0 {
		t.Errorf("no survivor reported node-c suspect before dead (memberlist's %q line changed?)",
			"Suspect <node> has failed, no acks received")
	}
}

func TestLeaveIsSeenAsLeft(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b", "node-c"})
	leaver := ms[2]

	start := time.Now()
	if err := leaver.Leave(leaveCtx(t)); err != nil {
		t.Fatalf("leave: %v", err)
	}
	t.Logf("Leave returned after %v", time.Since(start).Round(time.Millisecond))
	if got := leaver.State("node-c"); got != Left {
		t.Errorf("leaver sees itself %v, want left", got)
	}
	for _, m := range ms[:2] {
		waitState(t, m, "node-c", Left, 5*time.Second)
		t.Logf("%s saw node-c left %v after Leave began", m.name, m.book.since("node-c").Sub(start).Round(time.Millisecond))
	}
	if err := leaver.Leave(leaveCtx(t)); err != nil {
		t.Errorf("second Leave: %v, want nil", err)
	}
	if err := leaver.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := leaver.Leave(leaveCtx(t)); err == nil {
		t.Error("Leave after Shutdown: no error")
	}
	for _, m := range ms[:2] {
		if got := testutil.ToFloat64(m.metrics.failures); got != 0 {
			t.Errorf("%s: member_failures_total %v after a graceful leave, want 0", m.name, got)
		}
		if got := m.State("node-c"); got != Left {
			t.Errorf("%s: node-c is %v after the leaver shut down, want left", m.name, got)
		}
	}
}

func TestMemberWithAnotherKeyCannotJoin(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b"})
	intruder := startMember(t, "intruder", withKey([]byte("fedcba9876543210fedcba9876543210")))
	intruder.Join([]string{ms[0].addr(), ms[1].addr()})

	labkit.Eventually(t, 10*time.Second, "intruder to settle", intruder.Settled)
	if got := intruder.logs.matching("cannot join member"); len(got) != 2 {
		t.Errorf("intruder logged %d join failures, want 2:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, m := range ms {
		if got := m.State("intruder"); got != Unknown {
			t.Errorf("%s sees intruder %v, want unknown", m.name, got)
		}
		if got := intruder.State(m.name); got != Unknown {
			t.Errorf("intruder sees %s %v, want unknown", m.name, got)
		}
	}
}

func TestDeadIsRememberedAfterMemberlistForgets(t *testing.T) {
	timing := DefaultTiming()
	timing.GossipToTheDead = 300 * time.Millisecond
	ms := startCluster(t, []string{"node-a", "node-b", "node-c"}, withTiming(timing))
	observer := ms[0]
	if err := ms[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitState(t, observer, "node-c", Dead, 10*time.Second)

	// memberlist reaps a dead node at the first probe round after
	// GossipToTheDead; keep checking well past that.
	forgotten := observer.book.since("node-c").Add(timing.GossipToTheDead + 20*timing.ProbeInterval)
	labkit.Eventually(t, 10*time.Second, "memberlist's reap window to pass", func() bool {
		if got := observer.State("node-c"); got != Dead {
			t.Fatalf("node-c became %v while memberlist reaped it, want dead", got)
		}
		return time.Now().After(forgotten)
	})
	if got := observer.State("node-never-seen"); got != Unknown {
		t.Errorf("never seen node is %v, want unknown", got)
	}

	// Proof that memberlist really forgot node-c: a node-c on another
	// port is accepted (while memberlist remembers a dead node-c, a new
	// address for that name is refused as a conflict).
	again := startMember(t, "node-c", withTiming(timing))
	again.Join([]string{observer.addr()})
	waitState(t, observer, "node-c", Alive, 10*time.Second)
	waitState(t, ms[1], "node-c", Alive, 10*time.Second)
}

func TestSettled(t *testing.T) {
	a := startMember(t, "node-a")
	if a.Settled() {
		t.Fatal("settled before any Join")
	}
	a.Join(nil)
	labkit.Eventually(t, 5*time.Second, "settled after joining nobody", a.Settled)

	// A closed port refuses at once: the join fails and still settles.
	closed := startMember(t, "node-gone")
	closedAddr := closed.addr()
	if err := closed.Shutdown(); err != nil {
		t.Fatal(err)
	}
	b := startMember(t, "node-b")
	b.Join([]string{closedAddr, "not-an-address"})
	labkit.Eventually(t, 10*time.Second, "settled after every join failed", b.Settled)
	if b.State("node-gone") != Unknown {
		t.Errorf("node-gone is %v, want unknown", b.State("node-gone"))
	}
	if len(b.logs.matching("ignoring member address", "not-an-address")) != 1 {
		t.Error("bad address not logged")
	}

	// Some joins fail, one succeeds: settled, and the live one is known.
	c := startMember(t, "node-c")
	c.Join([]string{closedAddr, a.addr(), c.addr()})
	labkit.Eventually(t, 10*time.Second, "settled after a partial join", c.Settled)
	if got := c.State("node-a"); got != Alive {
		t.Errorf("node-c sees node-a %v once settled, want alive", got)
	}
}

func TestOnChangeFires(t *testing.T) {
	a := startMember(t, "node-a")
	var self atomic.Pointer[testMember]
	snaps := make(chan map[string]State, 1000)
	b := startMember(t, "node-b", withOnChange(func() {
		// Reading back from inside the callback must not deadlock:
		// OnChange runs with no lock of this package held.
		if m := self.Load(); m != nil {
			snaps <- m.Snapshot()
		}
	}))
	self.Store(b)
	b.Join([]string{a.addr()})
	waitSnapshot(t, snaps, "node-a", Alive)
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, snaps, "node-a", Dead)
}

// waitSnapshot waits for an OnChange call that sees node in state want.
func waitSnapshot(t *testing.T, snaps <-chan map[string]State, node string, want State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case snap := <-snaps:
			if snap[node] == want {
				return
			}
		case <-timeout:
			t.Fatalf("no OnChange call saw %s %v", node, want)
		}
	}
}

func TestLeaveWithExpiredContextStillAnnounces(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Both steps get 1 ms, far less than the gossip rounds they wait for.
	if err := ms[1].Leave(ctx); err == nil {
		t.Error("Leave with a cancelled context returned no error")
	} else {
		t.Logf("Leave: %v", err)
	}
	// The leave message was queued and gossip delivers it while the
	// member keeps running. The leaving flag, queued just before it, may be
	// superseded (memberlist keeps one pending message per node), so the
	// other side may record Dead rather than Left: either way, not Alive.
	labkit.Eventually(t, 5*time.Second, "node-a to see node-b gone", func() bool {
		s := ms[0].State("node-b")
		return s == Left || s == Dead
	})
	t.Logf("node-a sees node-b %v", ms[0].State("node-b"))
}

// TestRetainForgetsDeletedNodes: once a dead node's Node object is gone,
// Retain forgets it (state Unknown, no longer counted); a live node is kept
// even when Kubernetes has no Node for it.
func TestRetainForgetsDeletedNodes(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b", "node-c"})
	observer := ms[0]
	if err := ms[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitState(t, observer, "node-c", Dead, 10*time.Second)
	observer.Retain([]string{"node-c"}) // still a Node: kept, even if dead
	if got := observer.State("node-c"); got != Dead {
		t.Fatalf("node-c is %v after Retain that lists it, want dead", got)
	}
	observer.Retain([]string{"node-a"}) // node-b and node-c deleted
	if got := observer.State("node-c"); got != Unknown {
		t.Errorf("node-c is %v after its Node was deleted, want unknown", got)
	}
	if got := observer.State("node-b"); got != Alive {
		t.Errorf("node-b is %v: a live member must stay whatever Kubernetes says", got)
	}
	if len(observer.logs.matching("forgot members whose Node is gone", "node-c")) != 1 {
		t.Errorf("no log line for the forgotten node:\n%s", observer.logs.text())
	}
	waitMetrics(t, observer, `
# HELP herald_speaker_member_failures_total Nodes declared dead (stopped answering without leaving) as seen by this speaker.
# TYPE herald_speaker_member_failures_total counter
herald_speaker_member_failures_total 1
# HELP herald_speaker_members Nodes this speaker remembers, by member state (alive, suspect, dead, left); includes itself.
# TYPE herald_speaker_members gauge
herald_speaker_members{state="alive"} 2
herald_speaker_members{state="dead"} 0
herald_speaker_members{state="left"} 0
herald_speaker_members{state="suspect"} 0
`)
}

// TestKeyRotationNeverSplits rolls three members through the documented
// rotation (new key added second, then first, then the old one removed),
// one member at a time, and checks after every restart that every member
// sees every other alive: the member list never splits.
func TestKeyRotationNeverSplits(t *testing.T) {
	oldKey, newKey := testKey(), []byte("fedcba9876543210fedcba9876543210")
	names := []string{"node-a", "node-b", "node-c"}
	ms := startCluster(t, names)
	steps := []struct {
		name    string
		primary []byte
		others  [][]byte
	}{
		{"new key accepted", oldKey, [][]byte{newKey}},
		{"new key primary", newKey, [][]byte{oldKey}},
		{"old key removed", newKey, nil},
	}
	for _, step := range steps {
		for i := range ms {
			// a restarted speaker comes back on its node's address and port
			port := ms[i].ml.LocalNode().Port
			if err := ms[i].Leave(leaveCtx(t)); err != nil {
				t.Fatal(err)
			}
			if err := ms[i].Shutdown(); err != nil {
				t.Fatal(err)
			}
			ms[i] = startMember(t, names[i], func(c *Config) {
				c.SecretKey, c.OtherKeys, c.BindPort = step.primary, step.others, int(port)
			})
			var addrs []string
			for j, m := range ms {
				if j != i {
					addrs = append(addrs, m.addr())
				}
			}
			ms[i].Join(addrs)
			for _, m := range ms {
				for _, name := range names {
					waitState(t, m, name, Alive, 10*time.Second)
				}
			}
			t.Logf("%s: %s restarted, all alive", step.name, names[i])
		}
	}
	for _, m := range ms {
		if n := len(m.logs.matching("cannot join member")); n > 0 {
			t.Errorf("%s: %d join failures during the rotation", m.name, n)
		}
	}
}

// waitMetrics waits until the member's registry exposes exactly want (the
// gauges are published asynchronously, after OnChange is woken).
func waitMetrics(t *testing.T, m *testMember, want string) {
	t.Helper()
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err = testutil.GatherAndCompare(m.reg, strings.NewReader(want)); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s metrics: %v", m.name, err)
}

// TestFirstRoundReachesEveryMember: a starting member exchanges state with
// every address it was given, live members included, and settles only
// after that and once each has welcomed it (welcome.go), so that no member
// learns of it from gossip after it has started claiming addresses. With more addresses than
// parallel joins, the first join to finish makes the others members
// already: they are joined all the same.
func TestFirstRoundReachesEveryMember(t *testing.T) {
	var cluster []*testMember
	var addrs []string
	for i := range joinParallelism + 3 {
		m := startMember(t, fmt.Sprintf("node-%d", i))
		if len(addrs) > 0 {
			m.Join(addrs)
		}
		cluster = append(cluster, m)
		addrs = append(addrs, m.addr())
	}
	for _, m := range cluster {
		for j := range cluster {
			waitState(t, m, fmt.Sprintf("node-%d", j), Alive, 10*time.Second)
		}
	}
	c := startMember(t, "node-new")
	c.joiner.welcomeTimeout = time.Minute // settles only once welcomed
	c.Join(addrs)
	labkit.Eventually(t, 10*time.Second, "node-new settled", c.Settled)
	if n := len(c.logs.matching("member list settled", fmt.Sprintf("greeted=%d", len(cluster)), "notWelcomed=[]")); n != 1 {
		t.Errorf("node-new settled %d times having been welcomed by all %d members, want once:\n%s", n, len(cluster), c.logs.text())
	}
	for i, m := range cluster {
		if got := m.State("node-new"); got != Alive {
			t.Errorf("once node-new settled, node-%d sees it %v, want alive", i, got)
		}
		if n := len(c.logs.matching("joined member", m.addr())); n != 1 {
			t.Errorf("node-new joined node-%d %d times in its first round, want once (directly, though a member already)", i, n)
		}
	}
}
