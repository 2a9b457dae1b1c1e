package bgp

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
)

func TestAnswersWithin(t *testing.T) {
	if err := answersWithin(time.Second, func() error { return nil }); err != nil {
		t.Errorf("a call that answers: %v", err)
	}
	if err := answersWithin(time.Second, func() error { return errors.New("server stopped") }); err == nil || err.Error() != "BGP server: server stopped" {
		t.Errorf("a call that fails: %v", err)
	}
	block := make(chan struct{})
	defer close(block)
	err := answersWithin(20*time.Millisecond, func() error { <-block; return nil })
	if err == nil || !strings.Contains(err.Error(), "does not answer within 20ms") {
		t.Errorf("a call that blocks: %v", err)
	}
}

// TestFailureWithoutServer: no server running (no session yet, or shut
// down) is no failure.
func TestFailureWithoutServer(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Failure(time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestFailureOfAStoppedServer: a running GoBGP server answers; one that
// stopped while the speaker still holds it (not by stopServer) is a
// failure naming it.
func TestFailureOfAStoppedServer(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := startGobgp(context.Background(), slog.DiscardHandler, netip.MustParseAddr("198.51.100.11"), 64512, listenSpec{}, func(*apiutil.WatchEventMessage_PeerEvent) {})
	if err != nil {
		t.Fatal(err)
	}
	s.setSrvNow(g)
	if err := s.Failure(5 * time.Second); err != nil {
		t.Fatalf("running server: %v", err)
	}
	g.stop()
	if err := s.Failure(5 * time.Second); err == nil || !strings.Contains(err.Error(), "BGP server: ") {
		t.Fatalf("stopped server: %v, want a failure", err)
	}
}
