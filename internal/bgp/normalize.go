package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Defaults applied to a Session's zero fields.
const (
	defaultPort        = 179
	defaultHoldTime    = 90 * time.Second
	defaultConnectTime = 5 * time.Second
	defaultBFDInterval = 300 * time.Millisecond
	defaultBFDMult     = 3
	grRestartTime      = 120 // seconds announced in the graceful-restart capability
	// grDeferralTime bounds, in seconds, how long a restarted server holds
	// its routes back from a graceful-restart session while it waits for
	// the End-of-RIB of every such peer (RFC 4724 4.1). Herald learns no
	// routes, so there is nothing to wait for beyond GoBGP's own start;
	// GoBGP's default (360 s) would hold the routes back that long
	// whenever one such peer is unreachable. 0 means GoBGP's default.
	grDeferralTime = 1
)

// normalize fills a session's defaults and checks what GoBGP would refuse or
// silently change. The result compares equal to another normalized session
// exactly when GoBGP needs no change.
func normalize(s Session) (Session, error) {
	if s.Name == "" {
		return s, errors.New("session has no name")
	}
	if s.Unavailable != "" {
		return s, errors.New(s.Unavailable)
	}
	if err := checkUnnumbered(s); err != nil {
		return s, err
	}
	if !s.PeerAddress.IsValid() {
		return s, errors.New("peerAddress is not set")
	}
	s.PeerAddress = s.PeerAddress.Unmap()
	if err := checkASN(s); err != nil {
		return s, err
	}
	if s.PeerPort == 0 {
		s.PeerPort = defaultPort
	}
	if s.SourceAddress.IsValid() {
		s.SourceAddress = s.SourceAddress.Unmap()
		if s.SourceAddress.Is4() != s.PeerAddress.Is4() {
			return s, fmt.Errorf("sourceAddress %s and peerAddress %s are of different families", s.SourceAddress, s.PeerAddress)
		}
	}
	if s.RouterID.IsValid() && !s.RouterID.Unmap().Is4() {
		return s, fmt.Errorf("routerID %s is not an IPv4 address", s.RouterID)
	}
	s.RouterID = s.RouterID.Unmap()
	if err := normalizeTimers(&s); err != nil {
		return s, err
	}
	if err := normalizeBFD(&s); err != nil {
		return s, err
	}
	if err := normalizeVRF(&s); err != nil {
		return s, err
	}
	for _, f := range s.Families {
		if f != IPv4Unicast && f != IPv6Unicast {
			return s, fmt.Errorf("unknown address family %d", f)
		}
	}
	s.Families = normalizeFamilies(s)
	return s, nil
}

// normalizeVRF checks what the embedded server cannot do in a VRF: its
// listener and its BFD sockets are in the default VRF.
func normalizeVRF(s *Session) error {
	s.NextHopV4, s.NextHopV6 = s.NextHopV4.Unmap(), s.NextHopV6.Unmap()
	if s.VRF == "" {
		s.NextHopV4, s.NextHopV6 = netip.Addr{}, netip.Addr{}
		return nil
	}
	switch {
	case s.Passive:
		return fmt.Errorf("vrf %s: a passive session is not supported in a VRF (the listener is in the default VRF)", s.VRF)
	case s.BFD != nil:
		return fmt.Errorf("vrf %s: BFD is not supported in a VRF (GoBGP runs BFD in the default VRF)", s.VRF)
	case s.NextHopV4.IsValid() && !s.NextHopV4.Is4():
		return fmt.Errorf("vrf %s: IPv4 next hop %s is not an IPv4 address", s.VRF, s.NextHopV4)
	case s.NextHopV6.IsValid() && !s.NextHopV6.Is6():
		return fmt.Errorf("vrf %s: IPv6 next hop %s is not an IPv6 address", s.VRF, s.NextHopV6)
	}
	return nil
}

func normalizeTimers(s *Session) error {
	if s.HoldTime == 0 {
		s.HoldTime = defaultHoldTime
	}
	if s.HoldTime < 3*time.Second || s.HoldTime%time.Second != 0 {
		return fmt.Errorf("holdTime %s: must be whole seconds, at least 3s", s.HoldTime)
	}
	if s.KeepaliveTime == 0 {
		s.KeepaliveTime = (s.HoldTime / 3).Truncate(time.Second)
	}
	if s.KeepaliveTime < time.Second || s.KeepaliveTime%time.Second != 0 || s.KeepaliveTime > s.HoldTime {
		return fmt.Errorf("keepaliveTime %s: must be whole seconds, between 1s and holdTime %s", s.KeepaliveTime, s.HoldTime)
	}
	if s.ConnectTime == 0 {
		s.ConnectTime = defaultConnectTime
	}
	if s.ConnectTime < time.Second || s.ConnectTime%time.Second != 0 {
		return fmt.Errorf("connectTime %s: must be whole seconds, at least 1s", s.ConnectTime)
	}
	return nil
}

func normalizeBFD(s *Session) error {
	if s.BFD == nil {
		return nil
	}
	b := *s.BFD
	if b.ReceiveInterval == 0 {
		b.ReceiveInterval = defaultBFDInterval
	}
	if b.TransmitInterval == 0 {
		b.TransmitInterval = defaultBFDInterval
	}
	if b.DetectMultiplier == 0 {
		b.DetectMultiplier = defaultBFDMult
	}
	for _, d := range []time.Duration{b.ReceiveInterval, b.TransmitInterval} {
		if d < 10*time.Millisecond || d > 60*time.Second {
			return fmt.Errorf("bfd interval %s: must be between 10ms and 60s", d)
		}
	}
	if b.DetectMultiplier < 2 || b.DetectMultiplier > 255 {
		return fmt.Errorf("bfd detectMultiplier %d: must be between 2 and 255", b.DetectMultiplier)
	}
	s.BFD = &b
	return nil
}

// normalizeFamilies returns the sorted, deduplicated families, defaulting to
// the family of the peer address.
func normalizeFamilies(s Session) []Family {
	fams := slices.Clone(s.Families)
	if len(fams) == 0 {
		if s.Interface != "" {
			return []Family{IPv4Unicast, IPv6Unicast}
		}
		if s.PeerAddress.Is4() {
			return []Family{IPv4Unicast}
		}
		return []Family{IPv6Unicast}
	}
	slices.Sort(fams)
	return slices.Compact(fams)
}

// checkUnnumbered refuses an unnumbered session whose peer address is not
// a link-local neighbour on its interface (zoned with it), or that sets
// what does not apply to one: sourceAddress, ebgpMultiHop, passive.
func checkUnnumbered(s Session) error {
	if s.Interface == "" {
		return nil
	}
	a := s.PeerAddress
	switch {
	case !a.Is6() || !a.IsLinkLocalUnicast() || a.Zone() != s.Interface:
		return fmt.Errorf("interface %s: peer address %s is not a link-local neighbour on it", s.Interface, a)
	case s.SourceAddress.IsValid():
		return fmt.Errorf("interface %s: sourceAddress does not apply to an unnumbered session", s.Interface)
	case s.EBGPMultiHop:
		return fmt.Errorf("interface %s: ebgpMultiHop does not apply to an unnumbered session", s.Interface)
	case s.Passive:
		return fmt.Errorf("interface %s: passive does not apply to an unnumbered session", s.Interface)
	case s.VRF != "":
		return fmt.Errorf("interface %s: an unnumbered session runs in the default VRF, not in VRF %s", s.Interface, s.VRF)
	}
	return nil
}

// checkASN refuses a session without its AS numbers, or with both a peer
// AS and a class.
func checkASN(s Session) error {
	switch {
	case s.MyASN == 0:
		return errors.New("myASN must be set")
	case s.DynamicASN > AnyExternal:
		return fmt.Errorf("unknown dynamic ASN class %d", s.DynamicASN)
	case s.DynamicASN != FixedASN && s.PeerASN != 0:
		return fmt.Errorf("peerASN %d and dynamicASN %s are exclusive", s.PeerASN, s.DynamicASN)
	case s.DynamicASN == FixedASN && s.PeerASN == 0:
		return errors.New("peerASN or dynamicASN must be set")
	}
	return nil
}

func (s Session) ibgp() bool {
	if s.DynamicASN != FixedASN {
		return s.DynamicASN == AnyInternal
	}
	return s.MyASN == s.PeerASN
}

// classRefusal says why a router that opened a session with AS asn is
// refused, or "" when its AS is of the session's class. GoBGP itself
// refuses a wrong AS at OPEN for fixed and internal sessions; an external
// class session accepts any AS there and is checked once established.
func (s Session) classRefusal(asn uint32) string {
	if s.DynamicASN == AnyExternal && asn == s.MyASN {
		return fmt.Sprintf("the router's AS %d is myASN (internal) and spec.dynamicASN is external: session refused", asn)
	}
	return ""
}

// badPeerAS words GoBGP's refusal of a router's OPEN for its AS number.
func (s Session) badPeerAS() string {
	if s.DynamicASN == AnyInternal {
		return fmt.Sprintf("the router's AS is not myASN %d (external) and spec.dynamicASN is internal: session refused", s.MyASN)
	}
	return fmt.Sprintf("the router's AS is not peerASN %d: session refused", s.PeerASN)
}

func (s Session) carries(f Family) bool { return slices.Contains(s.Families, f) }
