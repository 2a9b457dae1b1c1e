package bgp

import (
	"context"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// applySessions carries out a session plan: deletions first, then in-place
// updates, then additions. A failure concerns one session only.
func (s *Speaker) applySessions(ctx context.Context, plan sessionPlan, restarting bool) []error {
	errs := s.applySessionChanges(ctx, plan, restarting)
	now := time.Now()
	for _, n := range sortedKeys(plan.refused) {
		r := plan.refused[n]
		s.status.refuse(n, r, now)
		errs = append(errs, wrapSession(n, r.err))
	}
	return errs
}

func (s *Speaker) applySessionChanges(ctx context.Context, plan sessionPlan, restarting bool) []error {
	if s.srv == nil {
		return nil
	}
	var errs []error
	if len(plan.remove) > 0 {
		s.metrics.observe(s.snapshot(ctx)) // keep the update counters of neighbors about to go
	}
	for _, ss := range plan.remove {
		if err := s.deletePeer(ctx, ss); err != nil {
			errs = append(errs, wrapSession(ss.Name, err))
		}
		s.metrics.restart(ss.Name)
	}
	for _, ss := range plan.update {
		if err := s.updatePeer(ctx, ss); err != nil {
			errs = append(errs, wrapSession(ss.Name, err))
		}
	}
	for _, ss := range plan.add {
		if err := s.addPeer(ctx, ss, restarting); err != nil {
			errs = append(errs, wrapSession(ss.Name, err))
		}
	}
	return errs
}

func (s *Speaker) deletePeer(ctx context.Context, ss Session) error {
	delete(s.configured, ss.Name)
	s.forgetSession(ss, "session deconfigured")
	s.log.Info("BGP session removed", "session", ss.Name, "peer", ss.PeerAddress)
	return s.srv.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: ss.PeerAddress.String()})
}

func (s *Speaker) updatePeer(ctx context.Context, ss Session) error {
	if _, err := s.srv.srv.UpdatePeer(ctx, &api.UpdatePeerRequest{Peer: peerConfig(ss, false)}); err != nil {
		return err
	}
	s.configured[ss.Name] = ss
	s.status.configure(ss, false, time.Now())
	s.log.Info("BGP session updated in place", "session", ss.Name, "peer", ss.PeerAddress)
	return nil
}

func (s *Speaker) addPeer(ctx context.Context, ss Session, restarting bool) error {
	if err := s.srv.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peerConfig(ss, restarting)}); err != nil {
		s.status.refuse(ss.Name, refusalOf(ss, err), time.Now())
		return err
	}
	s.configured[ss.Name] = ss
	s.status.configure(ss, true, time.Now())
	s.log.Info("BGP session added", "session", ss.Name, "peer", ss.PeerAddress, "asn", ss.MyASN, "peerASN", ss.PeerASN)
	return nil
}
