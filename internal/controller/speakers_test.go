package controller_test

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/k8s/lean"
	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/speaker"
	"github.com/herald-lb/herald/test/testenv"
)

// nullL2 is an L2 backend that announces nothing on the wire and reports
// one interface for every address: the speaker's decisions and its
// SpeakerStatus are real, the network is not.
type nullL2 struct{}

func (nullL2) SetAnnouncements([]layer2.Announcement) {}
func (nullL2) Interfaces(netip.Addr) []string         { return []string{"eth0"} }

// establishedBGP is a BGP backend whose every configured session is
// Established at once: the speaker's routes and SpeakerStatus are real,
// no router is.
type establishedBGP struct {
	mu       sync.Mutex
	sessions []bgp.SessionState
}

func (b *establishedBGP) ApplyChange(_ context.Context, c bgp.Change) error {
	if !c.All {
		return nil // a path change changes no session
	}
	d := c.Desired
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []bgp.SessionState
	for _, s := range d.Sessions {
		out = append(out, bgp.SessionState{Name: s.Name, Peer: s.PeerAddress, State: "Established", Since: time.Unix(1_000_000, 0)})
	}
	b.sessions = out
	return nil
}

func (b *establishedBGP) Sessions() []bgp.SessionState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sessions)
}

func (b *establishedBGP) Shutdown(context.Context) error { return nil }

// speakers runs a real speaker for each node in this process (liveness
// from their Leases, no member list, no network), so that the Services'
// herald.dev/Announced condition is confirmed the way it is in a cluster.
// They shut down, and their SpeakerStatuses go, when the test ends.
func (e *env) speakers(nodes ...string) { e.startSpeakers(nil, 100*time.Millisecond, nodes...) }

// startSpeakers is speakers with a BGP backend per node (nil: L2 only) and
// the least time between two SpeakerStatus writes.
func (e *env) startSpeakers(newBGP func() speaker.BGP, statusInterval time.Duration, nodes ...string) {
	e.t.Helper()
	cfg := testenv.Shared(e.t).AdminConfig
	for _, n := range nodes {
		opts := speaker.Options{
			NodeName: n, Namespace: heraldNS, PodName: "speaker-" + n, L2: nullL2{},
			LeaseRenew: time.Second, StatusInterval: statusInterval,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", n),
		}
		if newBGP != nil {
			opts.BGP = newBGP()
		}
		api, err := lean.New(cfg, heraldNS)
		if err != nil {
			e.t.Fatal(err)
		}
		s, err := speaker.New(api, opts)
		if err != nil {
			e.t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := s.Run(ctx); err != nil {
				e.t.Errorf("speaker %s: %v", n, err)
			}
		}()
		name := n
		e.t.Cleanup(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			s.Shutdown(sctx)
			scancel()
			cancel()
			<-done
			_ = e.herald.HeraldV1beta1().SpeakerStatuses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
}
