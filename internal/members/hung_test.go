package members

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// settleMargin is what a starting member may take beyond its greeting's
// timeout to settle: scheduling on a busy machine, and the polls.
const settleMargin = 400 * time.Millisecond

// TestHungAddressesDoNotDelayTheGreeting: member addresses that accept a
// connection and never answer (a hung speaker, something else on the
// port), more of them than the joins run in parallel, hold a starting
// member back no longer than the greeting's timeout after a member first
// saw it alive, whatever the timing. That member starts its old owner's
// release grace then; the timeout is below the grace.
func TestHungAddressesDoNotDelayTheGreeting(t *testing.T) {
	for _, preset := range []string{"default", "large"} {
		t.Run(preset, func(t *testing.T) {
			timing, err := Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			peer := startMember(t, "node-a", withTiming(timing))
			peer.Join(nil)
			c := startMember(t, "node-new", withTiming(timing))
			c.Join(append(hungListeners(t, joinParallelism+2), peer.addr()))
			waitState(t, peer, "node-new", Alive, 3*timing.StreamTimeout)
			seen := time.Now()
			labkit.Eventually(t, c.joiner.welcomeTimeout+settleMargin, "node-new settled", c.Settled)
			t.Logf("%s: settled %v after node-a saw it alive", preset, time.Since(seen).Round(time.Millisecond))
			if n := len(c.logs.matching("member list settled", "greeted=1", "notWelcomed=[]")); n != 1 {
				t.Errorf("node-new settled %d times welcomed by node-a, want once:\n%s", n, c.logs.text())
			}
		})
	}
}

// TestNobodyReachableSettlesWithinGreetingTimeout: a starting member whose
// every member address hangs settles alone within the greeting's timeout
// (it would otherwise wait StreamTimeout for every round of parallel joins).
func TestNobodyReachableSettlesWithinGreetingTimeout(t *testing.T) {
	c := startMember(t, "node-new", withTiming(LargeClusterTiming()))
	addrs := hungListeners(t, joinParallelism+2)
	start := time.Now()
	c.Join(addrs)
	labkit.Eventually(t, c.joiner.welcomeTimeout+settleMargin, "node-new settled", c.Settled)
	t.Logf("settled alone %v after Join", time.Since(start).Round(time.Millisecond))
	if n := len(c.logs.matching("member list settled", "greeted=0")); n != 1 {
		t.Errorf("node-new settled %d times greeting nobody, want once:\n%s", n, c.logs.text())
	}
}

// TestNewcomerGreetsMemberLearnedDuringGreeting: a member that the
// starting one learns of through gossip while it greets the others is
// greeted too, and waited for: it may own an address the newcomer takes.
func TestNewcomerGreetsMemberLearnedDuringGreeting(t *testing.T) {
	a := startCluster(t, []string{"node-a"}, withWelcomeAfterApplied())[0]
	c := startMember(t, "node-new")
	c.joiner.welcomeTimeout = time.Minute
	c.Join([]string{a.addr()})
	labkit.Eventually(t, 10*time.Second, "node-a greeted by node-new", func() bool { return greetedBy(a, "node-new") })
	b := startMember(t, "node-b", withWelcomeAfterApplied())
	b.Join([]string{a.addr()}) // not node-new's: it learns of node-b from node-a's gossip
	labkit.Eventually(t, 10*time.Second, "node-new to learn of node-b", func() bool { return c.welcome.dir.isStaying("node-b") })
	labkit.Eventually(t, 10*time.Second, "node-b greeted by node-new", func() bool { return greetedBy(b, "node-new") })
	waitState(t, b, "node-new", Alive, 10*time.Second)
	a.Applied(a.Generation())
	labkit.Eventually(t, 10*time.Second, "node-new welcomed by node-a", func() bool { return welcomedBy(c, "node-a") })
	if c.Settled() {
		t.Fatal("node-new settled before node-b, learned of during its greeting, welcomed it")
	}
	b.Applied(b.Generation())
	labkit.Eventually(t, 10*time.Second, "node-new settled", c.Settled)
	if n := len(c.logs.matching("member list settled", "greeted=2", "notWelcomed=[]")); n != 1 {
		t.Errorf("node-new settled %d times welcomed by both, want once:\n%s", n, c.logs.text())
	}
}

// hungListeners starts n TCP listeners on 127.0.0.1 that accept every
// connection and never answer, and returns their addresses. They and
// their connections are closed when the test ends (before its members
// shut down, so that no join is left waiting on them).
func hungListeners(t *testing.T, n int) []string {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	addrs := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		addrs[i] = l.Addr().String()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() { _ = l.Close() })
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return addrs
}
