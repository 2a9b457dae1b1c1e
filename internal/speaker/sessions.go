package speaker

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/bgp"
)

// SessionChanged records a BGP session going up or down as an event on its
// BGPPeer, naming this node and the reason. Wire it to the BGP backend's
// OnSessionChange.
func (s *Speaker) SessionChanged(ev bgp.SessionEvent) {
	peer, err := s.listers.peers.Get(ev.Name)
	if ev.Up {
		s.log.Info("BGP session established", "peer", ev.Name, "address", ev.Peer)
	} else {
		s.log.Warn("BGP session down", "peer", ev.Name, "address", ev.Peer, "reason", ev.Reason)
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
