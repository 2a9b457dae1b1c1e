package bgp

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
)

func TestGobgpHandler(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	got := map[string]string{}
	h := newGobgpHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), func(n, err string) {
		mu.Lock()
		got[n] = err
		mu.Unlock()
	}, func(n string) {
		mu.Lock()
		got[n] = "bad peer AS"
		mu.Unlock()
	})
	log2 := slog.New(h).With(slog.String("Topic", "Peer"), slog.String("Key", "198.51.100.2"))
	log2.Info("sent notification", slog.Int("Code", 6), slog.Int("Subcode", 2))
	if _, ok := got["198.51.100.2"]; ok {
		t.Errorf("a Cease taken for a bad peer AS: %v", got)
	}
	log2.Info("sent notification", slog.Int("Code", 2), slog.Int("Subcode", 2), slog.String("Data", ""))
	if got["198.51.100.2"] != "bad peer AS" {
		t.Errorf("bad peer AS notification not seen: %v", got)
	}
	peerLog := slog.New(h).With(slog.String("Topic", "Peer"), slog.String("Key", "198.51.100.1"))
	peerLog.Debug("failed to connect", slog.String("Error", "dial tcp: i/o timeout"))
	peerLog.Info("Peer Up")
	peerLog.Warn("hold timer expired")
	if got["198.51.100.1"] != "dial tcp: i/o timeout" {
		t.Errorf("connect error not captured: %v", got)
	}
	out := buf.String()
	if strings.Contains(out, "Peer Up") || strings.Contains(out, "failed to connect") {
		t.Errorf("GoBGP info and debug must be demoted below the speaker's info level:\n%s", out)
	}
	if !strings.Contains(out, "hold timer expired") || !strings.Contains(out, "component=gobgp") || !strings.Contains(out, "Key=198.51.100.1") {
		t.Errorf("warnings must pass with their attributes:\n%s", out)
	}
}

func TestEventQueueOrderAndClose(t *testing.T) {
	var got []string
	q := newEventQueue(func(ev SessionEvent) { got = append(got, ev.Name) })
	for _, n := range []string{"a", "b", "c"} {
		q.push(SessionEvent{Name: n})
	}
	q.close() // delivers what is pending
	q.push(SessionEvent{Name: "late"})
	if strings.Join(got, ",") != "a,b,c" {
		t.Errorf("events: %v", got)
	}
}

func TestStatusTransitions(t *testing.T) {
	st := newStatusTable()
	s := norm(t, sess("a", "198.51.100.1"))
	now := time.Now()
	st.configure(s, true, now)
	if _, ok := st.peerState(s.PeerAddress, "Active", "", 0, now); ok {
		t.Error("Idle to Active is no transition")
	}
	if tr, ok := st.peerState(s.PeerAddress, stateEstablished, "", 0, now); !ok || !tr.up {
		t.Error("Active to Established must be an up transition")
	}
	if tr, ok := st.peerState(s.PeerAddress, stateIdle, "hold-timer-expired", 0, now); !ok || tr.up {
		t.Error("Established to Idle must be a down transition")
	}
	if _, ok := st.peerState(peerB, stateEstablished, "", 0, now); ok {
		t.Error("an unknown address must be ignored")
	}
	snap := st.snapshot()
	if len(snap) != 1 || snap[0].lastDown != "hold-timer-expired" || snap[0].state != stateIdle {
		t.Errorf("snapshot: %+v", snap)
	}
	old := st.forget(s)
	if old.configured != true {
		t.Error("forget returns the status as it was")
	}
	if _, ok := st.peerState(s.PeerAddress, stateEstablished, "", 0, now); ok {
		t.Error("a forgotten session's events must be ignored")
	}
}

func TestMetricsCounterSurvivesRecreate(t *testing.T) {
	m, err := newMetrics(nil, func(context.Context) []sessionView { return nil })
	must(t, err)
	view := func(n uint64) []sessionView {
		return []sessionView{{SessionState: SessionState{Name: "a"}, live: true, updatesSent: n}}
	}
	m.observe(view(5))
	m.observe(view(7))
	m.restart("a")                                                    // neighbor re-created: GoBGP's counter starts over
	m.observe(view(3))                                                // 3 since the restart
	m.observe([]sessionView{{SessionState: SessionState{Name: "a"}}}) // no live data: unchanged
	if got := m.totals["a"].total; got != 10 {
		t.Errorf("total updates: %v, want 10", got)
	}
	m.observe(nil)
	if _, ok := m.totals["a"]; ok {
		t.Error("a session no longer reported must be dropped")
	}
}

// TestGobgpKeepsOnlyUnicastRIBs: the embedded server has RIBs for IPv4 and
// IPv6 unicast only (every other family would cost memory for nothing).
func TestGobgpKeepsOnlyUnicastRIBs(t *testing.T) {
	ctx := context.Background()
	g, err := startGobgp(ctx, slog.DiscardHandler, netip.MustParseAddr("198.51.100.1"), 64512, listenSpec{}, func(*apiutil.WatchEventMessage_PeerEvent) {})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	table := func(afi api.Family_Afi, safi api.Family_Safi) error {
		_, err := g.srv.GetTable(ctx, &api.GetTableRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: &api.Family{Afi: afi, Safi: safi}})
		return err
	}
	for _, afi := range []api.Family_Afi{api.Family_AFI_IP, api.Family_AFI_IP6} {
		if err := table(afi, api.Family_SAFI_UNICAST); err != nil {
			t.Errorf("%v unicast: %v", afi, err)
		}
	}
	if table(api.Family_AFI_L2VPN, api.Family_SAFI_EVPN) == nil || table(api.Family_AFI_IP, api.Family_SAFI_FLOW_SPEC_UNICAST) == nil {
		t.Error("the global RIB has families Herald never advertises")
	}
}
