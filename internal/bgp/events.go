package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// onPeerEvent runs on GoBGP's watch goroutine for every FSM state change.
func (s *Speaker) onPeerEvent(ev *apiutil.WatchEventMessage_PeerEvent) {
	if ev.Type != apiutil.PEER_EVENT_STATE && ev.Type != apiutil.PEER_EVENT_INIT {
		return
	}
	st := ev.Peer.State
	addr := st.NeighborAddress.Unmap()
	if s.refusedRouter(addr, st) {
		return
	}
	reason := downReason(st.DisconnectReason, st.DisconnectMessage)
	tr, changed := s.status.peerState(addr, stateName(st.SessionState), reason, st.PeerASN, time.Now())
	if !changed {
		return
	}
	own := !tr.up && s.status.takeOwnReset(addr)
	if !tr.up && tr.session.BFD != nil && bfdCaused(s.bfdState(addr), reason, own) {
		reason = "BFD down (" + reason + ")"
		s.status.setDownReason(addr, reason)
	}
	s.emit(tr.session, tr.up, reason)
}

// refusedRouter records a router refused for its AS number, and ends a
// session established with an AS outside its dynamicASN class; it
// reports true when the event must not count as the session coming up.
func (s *Speaker) refusedRouter(addr netip.Addr, st apiutil.PeerState) bool {
	ss, ok := s.status.sessionFor(addr)
	if !ok {
		return false
	}
	if st.DisconnectReason == api.PeerState_DISCONNECT_REASON_BAD_PEER_AS {
		s.status.refuseRouter(addr, ss.badPeerAS())
		return false
	}
	if st.SessionState != bgppkt.BGP_FSM_ESTABLISHED {
		return false
	}
	why := ss.classRefusal(st.PeerASN)
	if why == "" {
		return false
	}
	s.status.refuseRouter(addr, why)
	s.log.Warn("BGP router refused", "session", ss.Name, "peer", addr, "peerASN", st.PeerASN, "reason", why)
	// Not from the watch goroutine: GoBGP's management calls can wait on it.
	go s.resetRefused(ss, why)
	return true
}

// resetRefused ends a refused router's session with a Cease that says why.
// GoBGP dials again (or takes the router's next connection) after the
// session's connectTime, and the check repeats.
func (s *Speaker) resetRefused(ss Session, why string) {
	g := s.currentServer()
	if g == nil {
		return
	}
	s.status.markOwnReset(ss.PeerAddress)
	err := g.srv.ResetPeer(context.Background(), &api.ResetPeerRequest{Address: ss.PeerAddress.String(), Communication: why})
	if err != nil {
		s.status.takeOwnReset(ss.PeerAddress)
		s.log.Warn("BGP router refused, and its session could not be reset", "session", ss.Name, "error", err)
	}
}

// bfdCaused says whether a BFD-enabled session that went down was taken
// down by BFD. GoBGP resets the session (Cease, administrative reset)
// when its BFD session expires or the peer signals BFD down, and marks
// the BFD session down only after that reset: the state read here can
// still be Up (seen in CI), or Down, or empty while the BFD session is set
// up again. So an administrative reset the speaker sent and did not ask
// for itself (own: its graceful-restart release at shutdown) is BFD's,
// whatever the state says; any other reason is BFD's when the state is
// no longer Up.
func bfdCaused(bfd, reason string, own bool) bool {
	if own {
		return false
	}
	if strings.HasPrefix(reason, "notification-sent") && strings.Contains(reason, "administrative reset") {
		return true
	}
	return bfd != "" && bfd != "Up"
}

// downReason words GoBGP's disconnect reason for an operator.
func downReason(r api.PeerState_DisconnectReason, msg string) string {
	if msg == "" {
		msg = strings.ToLower(strings.TrimPrefix(r.String(), "DISCONNECT_REASON_"))
	}
	// A router's BFD tearing the session down: Cease subcode 10 (RFC 9384),
	// which GoBGP v4.8.0 does not name.
	if strings.HasPrefix(msg, "notification-received code 6(cease) subcode 10(") {
		return "BFD down on the peer (notification-received cease/BFD down)"
	}
	return msg
}

// bfdState asks GoBGP for a neighbor's BFD session state.
func (s *Speaker) bfdState(addr netip.Addr) string {
	g := s.currentServer()
	if g == nil {
		return ""
	}
	var state string
	_ = g.srv.ListPeer(context.Background(), &api.ListPeerRequest{Address: addr.String()}, func(p *api.Peer) {
		state = bfdStateName(p.GetState().GetBfdState().GetSessionState())
	})
	return state
}

func bfdStateName(st api.BfdSessionState) string {
	switch st {
	case api.BfdSessionState_BFD_SESSION_STATE_UP:
		return "Up"
	case api.BfdSessionState_BFD_SESSION_STATE_DOWN:
		return "Down"
	case api.BfdSessionState_BFD_SESSION_STATE_INIT:
		return "Init"
	case api.BfdSessionState_BFD_SESSION_STATE_ADMIN_DOWN:
		return "AdminDown"
	}
	return ""
}

// onBadPeerAS records that GoBGP refused a router's OPEN for its AS.
func (s *Speaker) onBadPeerAS(neighbor string) {
	addr, err := netip.ParseAddr(neighbor)
	if err != nil {
		return
	}
	addr = addr.Unmap()
	if ss, ok := s.status.sessionFor(addr); ok {
		s.status.refuseRouter(addr, ss.badPeerAS())
	}
}

// onConnectError records why GoBGP could not dial a neighbor.
func (s *Speaker) onConnectError(neighbor, err string) {
	addr, perr := netip.ParseAddr(neighbor)
	if perr != nil {
		return
	}
	s.status.connError(addr.Unmap(), err)
}

// connectHint explains a connect error: with a password, a router with
// another (or no) TCP MD5 key drops the SYN, so the dial just times out; a
// loopback peer is the node's own BGP daemon, which refuses the
// connection when it does not run or listens elsewhere.
func connectHint(err string, s Session) string {
	switch {
	case err == "":
		return err
	case s.Password != "" && strings.Contains(err, "timeout"):
		return fmt.Sprintf("%s (TCP MD5 password set: a router with a different password, or none, drops the connection silently)", err)
	case s.PeerAddress.IsLoopback() && strings.Contains(err, "connection refused"):
		return fmt.Sprintf("%s (%s is this node's own BGP daemon: nothing listens there on port %d; see docs/bgp-layouts.md)", err, s.PeerAddress, s.PeerPort)
	}
	return err
}
