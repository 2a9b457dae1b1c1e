package bgp

import (
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// BFD port and multihop TTL used for every session.
const (
	bfdPort     = 3784
	multihopTTL = 255
)

// peerConfig converts a normalized session into GoBGP's neighbor config.
// restarting: the session is added by a GoBGP server that has just
// started (the speaker restarted), see restartState.
func peerConfig(s Session, restarting bool) *api.Peer {
	p := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: s.PeerAddress.String(),
			PeerAsn:         peerASN(s),
			LocalAsn:        s.MyASN,
			AuthPassword:    s.Password,
			Description:     s.Name,
		},
		Transport: &api.Transport{RemotePort: uint32(s.PeerPort)},
		Timers: &api.Timers{Config: &api.TimersConfig{
			ConnectRetry:      seconds(s.ConnectTime),
			HoldTime:          seconds(s.HoldTime),
			KeepaliveInterval: seconds(s.KeepaliveTime),
			// After a reset (BFD down, admin reset) GoBGP waits this long
			// before redialing; its default is 30 s.
			IdleHoldTimeAfterReset: seconds(s.ConnectTime),
		}},
		AfiSafis: afiSafis(s),
	}
	p.Transport.PassiveMode = s.Passive
	p.Transport.BindInterface = s.VRF
	if s.SourceAddress.IsValid() {
		p.Transport.LocalAddress = s.SourceAddress.String()
	}
	if s.EBGPMultiHop {
		p.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: multihopTTL}
	}
	if s.GracefulRestart {
		// NotificationEnabled (RFC 8538) lets Shutdown end the session with
		// a Cease that the router treats as a restart, keeping our routes.
		// LocalRestarting sets the Restart State bit and, per family, the
		// Forwarding State bit in the OPEN of a restarted server: without
		// the latter the router drops the routes it kept the moment the
		// session is back (RFC 4724 4.2), before ours are sent again.
		p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: grRestartTime, NotificationEnabled: true,
			DeferralTime: grDeferralTime, LocalRestarting: restarting}
	}
	p.Bfd = bfdConfig(s.BFD)
	return p
}

// peerASN is the AS GoBGP expects in the router's OPEN: an internal class
// is myASN, which GoBGP then checks; 0 accepts any AS (external class,
// checked once established by classRefusal).
func peerASN(s Session) uint32 {
	switch s.DynamicASN {
	case AnyInternal:
		return s.MyASN
	case AnyExternal:
		return 0
	}
	return s.PeerASN
}

func afiSafis(s Session) []*api.AfiSafi {
	out := make([]*api.AfiSafi, 0, len(s.Families))
	for _, f := range s.Families {
		a := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: apiFamily(f), Enabled: true}}
		if s.GracefulRestart {
			a.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		out = append(out, a)
	}
	return out
}

func apiFamily(f Family) *api.Family {
	if f == IPv6Unicast {
		return &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
	}
	return &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
}

// bfdConfig returns GoBGP's BFD config; its intervals are in microseconds.
// A nil BFD gives an explicit "disabled", so UpdatePeer turns BFD off.
func bfdConfig(b *BFD) *api.BfdPeerConfig {
	if b == nil {
		return &api.BfdPeerConfig{Enabled: false}
	}
	return &api.BfdPeerConfig{
		Enabled:                  true,
		Port:                     bfdPort,
		DesiredMinimumTxInterval: uint32(b.TransmitInterval / time.Microsecond),
		RequiredMinimumReceive:   uint32(b.ReceiveInterval / time.Microsecond),
		DetectionMultiplier:      b.DetectMultiplier,
	}
}

func seconds(d time.Duration) uint64 { return uint64(d / time.Second) }
