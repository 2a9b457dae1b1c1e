package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
)

// shutdownPoll is how often Shutdown looks at GoBGP while it waits.
const shutdownPoll = 10 * time.Millisecond

// Shutdown withdraws every path, waits until the withdrawals are on the
// wire, then closes the sessions (Cease) and stops GoBGP. Sessions with
// GracefulRestart are first ended with a Cease that RFC 8538 routers treat
// as a restart, with no withdrawal, so the router keeps our routes for the
// restart time. When ctx ends first, the sessions are closed anyway and
// ctx's error is returned. Apply fails after Shutdown.
func (s *Speaker) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.weightTimer != nil {
		s.weightTimer.Stop()
	}
	s.watchNeighbors(false)
	defer s.events.close()
	if s.srv == nil {
		return nil
	}
	var errs []error
	if err := s.shutdownGracefully(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.releaseGracefully(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.withdrawAll(ctx); err != nil {
		errs = append(errs, err)
	}
	s.stopServer("speaker shut down")
	s.log.Info("BGP server stopped")
	return errors.Join(errs...)
}

// shutdownGracefully sends the paths again with the marking of a stop
// (gshutStop: on every session without graceful restart) and waits
// GracefulShutdownWait (or until ctx ends), so that those sessions'
// routers move new flows away before the withdrawal, while the routers
// of graceful-restart sessions keep forwarding through this node across
// the restart. Nothing to do with no wait or when no path goes to a
// session the stop marks, and no second wait when a drain marked every
// session already.
func (s *Speaker) shutdownGracefully(ctx context.Context) error {
	if s.gshutWait <= 0 || s.last.gshut == gshutDrain || !gshutStop.marksAny(s.last.sessions, s.deliveries) {
		return nil
	}
	d := s.want.desired()
	s.log.Info("BGP graceful shutdown: paths sent with GRACEFUL_SHUTDOWN before the withdrawal", "for", s.gshutWait, "routes", len(s.rib))
	err := s.apply(ctx, d) // s.closed: the plan marks as for a stop
	if err != nil {
		err = fmt.Errorf("graceful shutdown: %w", err)
	}
	t := time.NewTimer(s.gshutWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return err
}

// releaseGracefully ends the graceful-restart sessions without a
// withdrawal and without a Hard Reset, then deletes them while they are
// idle, so no Cease/Hard Reset follows.
func (s *Speaker) releaseGracefully(ctx context.Context) error {
	var gr []Session
	for _, n := range sortedKeys(s.configured) {
		if ss := s.configured[n]; ss.GracefulRestart {
			gr = append(gr, ss)
		}
	}
	if len(gr) == 0 {
		return nil
	}
	var errs []error
	for _, ss := range gr {
		s.status.markOwnReset(ss.PeerAddress)
		err := s.srv.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: ss.PeerAddress.String(), Communication: "graceful restart"})
		if err != nil {
			s.status.takeOwnReset(ss.PeerAddress) // no reset of ours is coming
			errs = append(errs, wrapSession(ss.Name, err))
		}
	}
	if err := s.waitPeers(ctx, func(p *api.Peer) bool {
		return p.GetState().GetSessionState() != api.PeerState_SESSION_STATE_ESTABLISHED
	}, gr); err != nil {
		errs = append(errs, fmt.Errorf("wait for graceful-restart sessions to close: %w", err))
	}
	for _, ss := range gr {
		if err := s.deletePeer(ctx, ss); err != nil {
			errs = append(errs, wrapSession(ss.Name, err))
		}
	}
	return errors.Join(errs...)
}

// withdrawAll deletes every path and waits until each established peer
// has sent the UPDATEs that carry the withdrawals: GoBGP writes its Cease
// on another goroutine than its UPDATEs, so stopping at once could cut
// them off. GoBGP packs withdrawals, at least one UPDATE per family the
// peer had paths in; that is the count waited for.
func (s *Speaker) withdrawAll(ctx context.Context) error {
	if len(s.rib) == 0 {
		return nil
	}
	before, err := s.srv.listPeers(ctx, true)
	if err != nil {
		return err
	}
	want := map[netip.Addr]uint64{}
	for a, p := range before {
		if p.GetState().GetSessionState() == api.PeerState_SESSION_STATE_ESTABLISHED {
			want[a] = p.GetState().GetMessages().GetSent().GetUpdate() + familiesWithPaths(p)
		}
	}
	if err := s.srv.srv.DeletePath(apiutil.DeletePathRequest{DeleteAll: true}); err != nil {
		return fmt.Errorf("withdraw all paths: %w", err)
	}
	s.rib = map[netip.Prefix]netip.Addr{}
	var sessions []Session
	for _, ss := range s.configured {
		if _, ok := want[ss.PeerAddress]; ok {
			sessions = append(sessions, ss)
		}
	}
	err = s.waitPeers(ctx, func(p *api.Peer) bool {
		a, _ := netip.ParseAddr(p.GetState().GetNeighborAddress())
		return p.GetState().GetSessionState() != api.PeerState_SESSION_STATE_ESTABLISHED ||
			p.GetState().GetMessages().GetSent().GetUpdate() >= want[a.Unmap()]
	}, sessions)
	if err != nil {
		return fmt.Errorf("wait for withdrawals to be sent: %w", err)
	}
	return nil
}

func familiesWithPaths(p *api.Peer) uint64 {
	var n uint64
	for _, af := range p.GetAfiSafis() {
		if af.GetState().GetAdvertised() > 0 {
			n++
		}
	}
	return n
}

// waitPeers polls GoBGP until done holds for every given session's
// neighbor (a neighbor GoBGP no longer has counts as done).
func (s *Speaker) waitPeers(ctx context.Context, done func(*api.Peer) bool, sessions []Session) error {
	t := time.NewTicker(shutdownPoll)
	defer t.Stop()
	for {
		peers, err := s.srv.listPeers(ctx, false)
		if err != nil {
			return err
		}
		all := true
		for _, ss := range sessions {
			if p, ok := peers[ss.PeerAddress]; ok && !done(p) {
				all = false
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
