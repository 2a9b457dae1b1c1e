package speaker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	heraldlisters "github.com/herald-lb/herald/api/generated/listers/api/v1beta1"

	"github.com/herald-lb/herald/internal/bgp"
)

// sessionReporter reports the BGP sessions: their transitions and
// problems as events on their BGPPeers, and as changes of the status.
type sessionReporter struct {
	backend BGP // nil: no session, only the status's refresh
	peers   heraldlisters.BGPPeerLister
	node    string
	rec     record.EventRecorder
	log     *slog.Logger
	// statusChanged asks for a status write (statusReporter.changed).
	statusChanged func()
}

// changed records a BGP session going up or down as an event on its
// BGPPeer, naming this node and the reason. The event loop calls it for
// Events.SessionChanged.
func (s *sessionReporter) changed(ev bgp.SessionEvent) {
	s.statusChanged()
	peer, err := s.peers.Get(ev.Name)
	if ev.Up {
		s.log.Info("BGP session established", "session", ev.Name, "peer", ev.Peer)
	} else {
		s.log.Warn("BGP session down", "session", ev.Name, "peer", ev.Peer, "reason", ev.Reason)
	}
	if err != nil {
		return
	}
	if ev.Up {
		s.rec.Eventf(peer, corev1.EventTypeNormal, "SessionEstablished", "node %s: session with %s established", s.node, ev.Peer)
		return
	}
	s.rec.Eventf(peer, corev1.EventTypeWarning, "SessionDown", "node %s: session with %s down: %s", s.node, ev.Peer, ev.Reason)
}

// sessionProblems remembers the last problem reported per BGPPeer, so a
// problem is reported once, when it appears or changes.
type sessionProblems map[string]string

// reportProblems turns what the BGP backend says about sessions
// that are not established (connect errors, a password that does not
// match) or are refused or configured with warnings into Warning events on
// the BGPPeers, once per new problem.
func (s *sessionReporter) reportProblems(seen sessionProblems) {
	if s.backend == nil {
		return
	}
	current := map[string]bool{}
	for _, st := range s.backend.Sessions() {
		problem := sessionProblem(st)
		current[st.Name] = true
		if problem == seen[st.Name] {
			continue
		}
		seen[st.Name] = problem
		if problem == "" {
			continue
		}
		s.log.Warn("BGP session problem", "session", st.Name, "problem", problem)
		if peer, err := s.peers.Get(st.Name); err == nil {
			s.rec.Eventf(peer, corev1.EventTypeWarning, "SessionProblem", "node %s: %s", s.node, problem)
		}
	}
	for name := range seen {
		if !current[name] {
			delete(seen, name)
		}
	}
}

// sessionProblem is what is wrong with a session, in order: a refused
// configuration, a refused router (its AS), a connect error, warnings.
func sessionProblem(st bgp.SessionState) string {
	switch {
	case st.Error != "":
		return st.Error
	case st.Refused != "":
		return st.Refused
	case st.State != "Established" && st.LastError != "":
		return "not established: " + st.LastError
	}
	return strings.Join(st.Warnings, "; ")
}

// watch reports session problems every interval until ctx ends.
// Connect errors happen between reconciles, so they are read on a timer.
func (s *sessionReporter) watch(ctx context.Context, interval time.Duration) {
	seen := sessionProblems{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reportProblems(seen)
			s.statusChanged() // states other than Established change unannounced

		}
	}
}
