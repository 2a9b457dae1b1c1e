package bgp

import (
	"context"
	"net/netip"

	api "github.com/osrg/gobgp/v4/api"
)

// sessionView is a SessionState plus what metrics need.
type sessionView struct {
	SessionState
	up          bool
	bfd         bool // the session has a BFD profile
	live        bool // filled from GoBGP just now
	updatesSent uint64
}

// Sessions reports every desired session, configured or refused, sorted by
// name, with GoBGP's current view of it. It is safe to call at any time,
// also from OnSessionChange.
func (s *Speaker) Sessions() []SessionState {
	views := s.snapshot(context.Background())
	out := make([]SessionState, len(views))
	for i, v := range views {
		out[i] = v.SessionState
	}
	return out
}

func (s *Speaker) snapshot(ctx context.Context) []sessionView {
	sts := s.status.snapshot()
	var peers map[netip.Addr]*api.Peer
	if g := s.currentServer(); g != nil {
		peers, _ = g.listPeers(ctx, true) // on error: the watch's view only
	}
	out := make([]sessionView, 0, len(sts))
	for _, st := range sts {
		v := sessionView{up: st.up, bfd: st.session.BFD != nil, SessionState: SessionState{
			Name: st.session.Name, Peer: st.session.PeerAddress, Interface: st.session.Interface, State: st.state, Since: st.since,
			LastDownReason: st.lastDown, LastError: connectHint(st.lastConnErr, st.session),
			Error: st.err, Warnings: st.warnings, PeerASN: st.peerASN, Refused: st.refused,
		}}
		if p, ok := peers[st.session.PeerAddress]; ok && st.configured {
			fillFromPeer(&v, p, st.session.BFD != nil)
		}
		out = append(out, v)
	}
	return out
}

// fillFromPeer copies GoBGP's live counters and states into a view.
func fillFromPeer(v *sessionView, p *api.Peer, bfd bool) {
	state := p.GetState()
	v.live = true
	v.State = apiStateName(state.GetSessionState())
	v.up = state.GetSessionState() == api.PeerState_SESSION_STATE_ESTABLISHED
	if bfd {
		v.BFD = bfdStateName(state.GetBfdState().GetSessionState())
	}
	v.updatesSent = state.GetMessages().GetSent().GetUpdate()
	if !v.up {
		return
	}
	if a, err := netip.ParseAddr(p.GetTransport().GetLocalAddress()); err == nil {
		v.LocalAddress = a.Unmap()
	}
	for _, af := range p.GetAfiSafis() {
		v.PathsAdvertised += int(af.GetState().GetAdvertised())
	}
}

func apiStateName(st api.PeerState_SessionState) string {
	switch st {
	case api.PeerState_SESSION_STATE_CONNECT:
		return "Connect"
	case api.PeerState_SESSION_STATE_ACTIVE:
		return "Active"
	case api.PeerState_SESSION_STATE_OPENSENT:
		return "OpenSent"
	case api.PeerState_SESSION_STATE_OPENCONFIRM:
		return "OpenConfirm"
	case api.PeerState_SESSION_STATE_ESTABLISHED:
		return stateEstablished
	}
	return stateIdle
}
