package speaker

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/bgp"
)

// SessionChanged records a BGP session going up or down as an event on its
// BGPPeer, naming this node and the reason. The event loop calls it for
// Events.SessionChanged.
func (s *Speaker) SessionChanged(ev bgp.SessionEvent) {
	s.status.changed()
	peer, err := s.cluster.listers.Peers.Get(ev.Name)
	if ev.Up {
		s.log.Info("BGP session established", "session", ev.Name, "peer", ev.Peer)
	} else {
		s.log.Warn("BGP session down", "session", ev.Name, "peer", ev.Peer, "reason", ev.Reason)
	}
	if err != nil {
		return
	}
	if ev.Up {
		s.rec.Eventf(peer, corev1.EventTypeNormal, "SessionEstablished", "node %s: session with %s established", s.opts.NodeName, ev.Peer)
		return
	}
	s.rec.Eventf(peer, corev1.EventTypeWarning, "SessionDown", "node %s: session with %s down: %s", s.opts.NodeName, ev.Peer, ev.Reason)
}

// sessionProblems remembers the last problem reported per BGPPeer, so a
// problem is reported once, when it appears or changes.
type sessionProblems map[string]string

// reportSessionProblems turns what the BGP backend says about sessions
// that are not established (connect errors, a password that does not
// match) or are refused or configured with warnings into Warning events on
// the BGPPeers, once per new problem.
func (s *Speaker) reportSessionProblems(seen sessionProblems) {
	if s.opts.BGP == nil {
		return
	}
	current := map[string]bool{}
	for _, st := range s.opts.BGP.Sessions() {
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
		if peer, err := s.cluster.listers.Peers.Get(st.Name); err == nil {
			s.rec.Eventf(peer, corev1.EventTypeWarning, "SessionProblem", "node %s: %s", s.opts.NodeName, problem)
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

// watchSessions reports session problems every interval until ctx ends.
// Connect errors happen between reconciles, so they are read on a timer.
func (s *Speaker) watchSessions(ctx context.Context, interval time.Duration) {
	seen := sessionProblems{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reportSessionProblems(seen)
			s.status.changed() // states other than Established change unannounced

		}
	}
}
