package members

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

func TestWelcomeMsgRoundTrip(t *testing.T) {
	for _, m := range []welcomeMsg{
		{kind: kindHello, nonce: 1, from: "node-a"},
		{kind: kindWelcome, nonce: 0xfedcba9876543210, from: strings.Repeat("n", maxNodeName)},
	} {
		got, err := decodeWelcomeMsg(m.encode())
		if err != nil || got != m {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestDecodeWelcomeMsgRejects(t *testing.T) {
	good := welcomeMsg{kind: kindHello, nonce: 7, from: "node-a"}.encode()
	with := func(i int, b byte) []byte {
		c := bytes.Clone(good)
		c[i] = b
		return c
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"no name":        good[:welcomeHeader],
		"other magic":    with(0, 'X'),
		"other version":  with(1, welcomeVersion+1),
		"unknown kind":   with(2, 9),
		"name too long":  welcomeMsg{kind: kindHello, from: strings.Repeat("n", maxNodeName+1)}.encode(),
		"reports format": encodeReports([]report{{node: "node-a", state: Dead}}),
	} {
		if m, err := decodeWelcomeMsg(b); err == nil {
			t.Errorf("%s: decoded %+v, want an error", name, m)
		}
	}
}

// FuzzDecodeWelcomeMsg: any bytes from the network decode without panic,
// and what decodes encodes back to the same bytes.
func FuzzDecodeWelcomeMsg(f *testing.F) {
	f.Add(welcomeMsg{kind: kindHello, nonce: 42, from: "node-a"}.encode())
	f.Add(welcomeMsg{kind: kindWelcome, nonce: 1, from: "n"}.encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeWelcomeMsg(b)
		if err != nil {
			return
		}
		if again := m.encode(); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v from %x, which encodes to %x", m, b, again)
		}
	})
}

// TestNewcomerWaitsForAppliedDecisions: with WelcomeAfterApplied, a
// starting member settles only once every member has applied a decision
// that saw it up; a decision taken before it came up does not count.
func TestNewcomerWaitsForAppliedDecisions(t *testing.T) {
	peers := startCluster(t, []string{"node-a", "node-b"}, withWelcomeAfterApplied())
	before := peers[0].Generation()
	c := startMember(t, "node-new")
	c.joiner.welcomeTimeout = time.Minute
	c.Join([]string{peers[0].addr(), peers[1].addr()})
	for _, p := range peers {
		waitState(t, p, "node-new", Alive, 10*time.Second)
		labkit.Eventually(t, 10*time.Second, p.name+" greeted by node-new", func() bool { return greetedBy(p, "node-new") })
	}
	peers[0].Applied(before) // taken before node-new came up
	peers[1].Applied(peers[1].Generation())
	labkit.Eventually(t, 10*time.Second, "node-new welcomed by node-b", func() bool { return welcomedBy(c, "node-b") })
	if c.Settled() || !greetedBy(peers[0], "node-new") {
		t.Fatalf("node-new settled (%v) or node-a welcomed it (%v) after a decision that did not see it",
			c.Settled(), !greetedBy(peers[0], "node-new"))
	}
	peers[0].Applied(peers[0].Generation())
	labkit.Eventually(t, 10*time.Second, "node-new settled", c.Settled)
	if n := len(c.logs.matching("member list settled", "greeted=2", "notWelcomed=[]")); n != 1 {
		t.Errorf("node-new settled %d times welcomed by both, want once:\n%s", n, c.logs.text())
	}
}

// TestNewcomerSettlesWithoutWelcome: members that never welcome (an
// earlier version, or a speaker that does not reconcile) hold a starting
// member back for welcomeTimeout only, and it names them.
func TestNewcomerSettlesWithoutWelcome(t *testing.T) {
	peers := startCluster(t, []string{"node-a"}, withWelcomeAfterApplied())
	c := startMember(t, "node-new")
	c.joiner.welcomeTimeout = 300 * time.Millisecond
	joined := time.Now()
	c.Join([]string{peers[0].addr()})
	labkit.Eventually(t, 10*time.Second, "node-new settled", c.Settled)
	if took := time.Since(joined); took < c.joiner.welcomeTimeout {
		t.Errorf("settled %v after joining, before the %v a welcome is waited for", took, c.joiner.welcomeTimeout)
	}
	if n := len(c.logs.matching("member list settled", "greeted=1", "notWelcomed=[node-a]")); n != 1 {
		t.Errorf("node-new did not name node-a as not welcoming it:\n%s", c.logs.text())
	}
}

// TestNewcomerStopsWaitingForDeadMember: a greeted member that dies is
// not waited for.
func TestNewcomerStopsWaitingForDeadMember(t *testing.T) {
	peers := startCluster(t, []string{"node-a", "node-b"}, withWelcomeAfterApplied())
	c := startMember(t, "node-new")
	c.joiner.welcomeTimeout = time.Minute
	c.Join([]string{peers[0].addr(), peers[1].addr()})
	labkit.Eventually(t, 10*time.Second, "node-b greeted by node-new", func() bool { return greetedBy(peers[1], "node-new") })
	peers[0].Applied(peers[0].Generation())
	labkit.Eventually(t, 10*time.Second, "node-new welcomed by node-a", func() bool { return welcomedBy(c, "node-a") })
	if err := peers[1].Shutdown(); err != nil {
		t.Fatal(err)
	}
	labkit.Eventually(t, 10*time.Second, "node-new settled once node-b is gone", c.Settled)
}

func withWelcomeAfterApplied() memberOption {
	return func(c *Config) { c.WelcomeAfterApplied = true }
}

// greetedBy: m holds a hello of node it has not answered yet.
func greetedBy(m *testMember, node string) bool {
	m.welcome.mu.Lock()
	defer m.welcome.mu.Unlock()
	_, ok := m.welcome.pending[node]
	return ok
}

// welcomedBy: node welcomed m's current greeting.
func welcomedBy(m *testMember, node string) bool {
	m.welcome.mu.Lock()
	defer m.welcome.mu.Unlock()
	return m.welcome.welcomed[node]
}
