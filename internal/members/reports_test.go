package members

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-lb/herald/test/labkit"
)

func TestReportsRoundTrip(t *testing.T) {
	for _, reps := range [][]report{
		nil,
		{{node: "node1", state: Dead}},
		{{node: "a", state: Left}, {node: strings.Repeat("n", maxNodeName), state: Dead}, {node: "node-3.example", state: Dead}},
	} {
		got, err := decodeReports(encodeReports(reps))
		if err != nil || !slices.Equal(got, reps) {
			t.Errorf("round trip of %v: %v, %v", reps, got, err)
		}
	}
}

func TestDecodeReportsRejectsMalformed(t *testing.T) {
	good := encodeReports([]report{{node: "node1", state: Dead}})
	for name, buf := range map[string][]byte{
		"empty":          nil,
		"other version":  append([]byte{2}, good[1:]...),
		"alive reported": {reportsVersion, byte(Alive), 1, 'a'},
		"unknown state":  {reportsVersion, 9, 1, 'a'},
		"empty name":     {reportsVersion, byte(Dead), 0},
		"name too long":  append([]byte{reportsVersion, byte(Dead), 0xfe, 0x01}, bytes.Repeat([]byte{'a'}, 254)...),
		"truncated name": good[:len(good)-1],
		"bad uvarint":    {reportsVersion, byte(Dead), 0x80},
		"padded length":  {reportsVersion, byte(Dead), 0x81, 0x00, 'a'},
	} {
		if got, err := decodeReports(buf); err == nil {
			t.Errorf("%s: decoded %v, want an error", name, got)
		}
	}
}

// FuzzDecodeReports: decoding another member's push-pull state never
// panics, and whatever decodes encodes back to the same bytes.
func FuzzDecodeReports(f *testing.F) {
	f.Add(encodeReports([]report{{node: "node1", state: Dead}, {node: "node2", state: Left}}))
	f.Add([]byte{reportsVersion})
	f.Add([]byte{reportsVersion, byte(Dead), 0x80})
	f.Fuzz(func(t *testing.T, buf []byte) {
		reps, err := decodeReports(buf)
		if err != nil {
			return
		}
		if again := encodeReports(reps); !bytes.Equal(again, buf) {
			t.Fatalf("decoded %v from %x, encodes to %x", reps, buf, again)
		}
	})
}

func TestBookTakesReportsOnlyForUnseenNodes(t *testing.T) {
	b := newBook()
	b.alive("seen")
	for _, r := range []report{{"seen", Dead}, {"never", Dead}, {"left", Left}, {"never", Left}} {
		b.reported(r)
	}
	if _, ok := b.reported(report{"other", Alive}); ok {
		t.Error("a report of an alive node was taken")
	}
	want := map[string]State{"seen": Alive, "never": Dead, "left": Left}
	for node, s := range want {
		if got := b.state(node); got != s {
			t.Errorf("%s: %v, want %v", node, got, s)
		}
	}
	if got := b.gone(); !slices.Equal(got, []report{{"left", Left}, {"never", Dead}}) {
		t.Errorf("gone: %v", got)
	}
	b.alive("never")
	if got := b.state("never"); got != Alive {
		t.Errorf("a reported node seen alive is %v", got)
	}
}

// TestMemberThatJoinsLaterLearnsAnEarlierDeath: node-c crashes and the
// others see it dead; node-d, which joins afterwards (a speaker that
// restarted, or a new node), never saw node-c and memberlist would tell it
// nothing, yet it too sees node-c dead, from node-a's and node-b's
// reports, by the time its first join has settled. It counts no failure of
// its own. When node-c comes back, node-d sees it alive.
func TestMemberThatJoinsLaterLearnsAnEarlierDeath(t *testing.T) {
	ms := startCluster(t, []string{"node-a", "node-b", "node-c"})
	cAddr := ms[2].addr()
	if err := ms[2].Shutdown(); err != nil { // a crash
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		waitState(t, m, "node-c", Dead, 10*time.Second)
	}
	d := startMember(t, "node-d")
	d.Join([]string{ms[0].addr(), ms[1].addr(), cAddr})
	labkit.Eventually(t, 10*time.Second, "node-d's first join settled", d.Settled)
	if got := d.State("node-c"); got != Dead {
		t.Fatalf("node-d sees node-c %v once settled, want dead (reported)", got)
	}
	if got := d.logs.matching("member reported gone by another member", "member=node-c"); len(got) == 0 {
		t.Errorf("node-d did not log the report: %s", d.logs.text())
	}
	if n := testutil.ToFloat64(d.metrics.failures); n != 0 {
		t.Errorf("node-d counted %v failures, want 0 (node-c died before it joined)", n)
	}

	// node-c's speaker back on its address and port, as after a restart
	c := startMember(t, "node-c", func(cfg *Config) { cfg.BindPort = int(netip.MustParseAddrPort(cAddr).Port()) })
	c.Join([]string{ms[0].addr(), d.addr()})
	waitState(t, d, "node-c", Alive, 10*time.Second)
}
