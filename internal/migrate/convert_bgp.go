package migrate

import (
	"fmt"
	"net/netip"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

// communityValue matches a literal community (not an alias), the way
// Herald's schema reads one; the number ranges are checked apart.
var communityValue = regexp.MustCompile(`^([0-9]{1,5}:[0-9]{1,5}|large:[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10})$`)

// validCommunity reports whether v is a community Herald accepts.
func validCommunity(v string) bool {
	if !communityValue.MatchString(v) {
		return false
	}
	var a, b, c, d uint64
	if n, _ := fmt.Sscanf(v, "large:%d:%d:%d", &a, &b, &c); n == 3 {
		return a <= 1<<32-1 && b <= 1<<32-1 && c <= 1<<32-1
	}
	n, _ := fmt.Sscanf(v, "%d:%d", &a, &d)
	return n == 2 && a <= 65535 && d <= 65535
}

// interfaceName matches a name Herald's schema accepts in spec.interface
// ("." and ".." aside, which no interface is named).
var interfaceName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// bfd converts a BFDProfile: the three timers carry over; echo, passive
// mode and the multihop TTL do not exist in Herald's single-hop BFD.
func (c *converter) bfd(b mlbBFD) *v1beta1.BFDProfile {
	who := c.who(KindBFDProfile, b.object)
	out := &v1beta1.BFDProfile{TypeMeta: typeMeta("BFDProfile"), ObjectMeta: c.meta(KindBFDProfile, b.object)}
	out.Spec.ReceiveInterval = int32Of(b.Spec.ReceiveInterval)
	out.Spec.TransmitInterval = int32Of(b.Spec.TransmitInterval)
	out.Spec.DetectMultiplier = int32Of(b.Spec.DetectMultiplier)
	if b.Spec.EchoMode != nil && *b.Spec.EchoMode {
		c.rep.add(Dropped, who, "spec.echoMode", "Herald's BFD sends no echo packets")
	}
	if b.Spec.EchoInterval != nil {
		c.rep.add(Dropped, who, "spec.echoInterval", "Herald's BFD sends no echo packets")
	}
	if b.Spec.PassiveMode != nil && *b.Spec.PassiveMode {
		c.rep.add(Dropped, who, "spec.passiveMode", "Herald's BFD always starts the session itself")
	}
	if b.Spec.MinimumTTL != nil {
		c.rep.add(Dropped, who, "spec.minimumTtl", "multihop BFD only; Herald's BFD is single-hop")
	}
	return out
}

func int32Of(v *uint32) *int32 {
	if v == nil {
		return nil
	}
	return ptr(int32(*v))
}

// community converts a Community: each alias keeps its value under a name
// Herald accepts and no other alias takes.
func (c *converter) community(cm mlbCommunity) *v1beta1.Community {
	who := c.who(KindCommunity, cm.object)
	out := &v1beta1.Community{TypeMeta: typeMeta("Community"), ObjectMeta: c.meta(KindCommunity, cm.object)}
	seen := map[string]bool{}
	for i, a := range cm.Spec.Communities {
		field := fmt.Sprintf("spec.communities[%d]", i)
		name := c.alias[ref{cm.Metadata.Namespace, a.Name}]
		switch {
		case seen[name]:
			c.rep.add(Dropped, who, field, "alias %s is defined twice; the first definition is kept", a.Name)
			continue
		case !validCommunity(a.Value):
			c.rep.add(Dropped, who, field+".value", "%q is neither a standard community a:b nor a large community large:a:b:c", a.Value)
			continue
		case name != a.Name:
			c.rep.add(Note, who, field+".name", "alias %s is named %s in Herald (lower case letters, digits and dashes, unique in the cluster); advertisements using it are rewritten", a.Name, name)
		}
		seen[name] = true
		out.Spec.Communities = append(out.Spec.Communities, v1beta1.CommunityAlias{Name: name, Value: a.Value})
	}
	if len(out.Spec.Communities) == 0 {
		c.rep.add(Dropped, who, "", "no usable alias; the Community is left out")
		return nil
	}
	return out
}

// bgpAdv converts a BGPAdvertisement.
func (c *converter) bgpAdv(a mlbBGPAdv) *v1beta1.BGPAdvertisement {
	who := c.who(KindBGPAdvertisement, a.object)
	out := &v1beta1.BGPAdvertisement{TypeMeta: typeMeta("BGPAdvertisement"), ObjectMeta: c.meta(KindBGPAdvertisement, a.object)}
	s := &out.Spec
	s.IPAddressPools = c.refs(KindIPAddressPool, a.object, "spec.ipAddressPools", a.Spec.IPAddressPools)
	s.IPAddressPoolSelectors = a.Spec.IPAddressPoolSelectors
	s.NodeSelectors = a.Spec.NodeSelectors
	s.Peers = c.refs(KindBGPPeer, a.object, "spec.peers", a.Spec.Peers)
	s.AggregationLength, s.AggregationLengthV6 = a.Spec.AggregationLength, a.Spec.AggregationLengthV6
	switch lp := a.Spec.LocalPref; {
	case lp == nil:
	case *lp == 0:
		c.rep.add(Changed, who, "spec.localPref", "0 is MetalLB's \"unset\"; left unset, so Herald sends no LOCAL_PREF and the router applies its default")
	default:
		s.LocalPref = ptr(int64(*lp))
	}
	for i, v := range a.Spec.Communities {
		field := fmt.Sprintf("spec.communities[%d]", i)
		if validCommunity(v) {
			s.Communities = append(s.Communities, v)
			continue
		}
		r := ref{a.Metadata.Namespace, v}
		name, ok := c.alias[r]
		if !ok {
			c.rep.add(Dropped, who, field, "%q is neither a community value nor an alias of a Community in namespace %s", v, a.Metadata.Namespace)
			continue
		}
		if !validCommunity(c.value[r]) {
			c.rep.add(Dropped, who, field, "alias %s has a value Herald does not accept", v)
			continue
		}
		s.Communities = append(s.Communities, name)
	}
	return out
}

// peer converts a BGPPeer. A localASN becomes the session's myASN, and a
// session without dualStackAddressFamily carries its own family only when
// the pools hold both.
func (c *converter) peer(p mlbPeer) *v1beta1.BGPPeer {
	who := c.who(KindBGPPeer, p.object)
	sp := p.Spec
	if why := unconvertiblePeer(p); why != "" {
		c.rep.add(Dropped, who, "", "%s; the peer is left out", why)
		return nil
	}
	out := &v1beta1.BGPPeer{TypeMeta: typeMeta("BGPPeer"), ObjectMeta: c.meta(KindBGPPeer, p.object)}
	s := &out.Spec
	s.MyASN, s.PeerASN, s.PeerAddress, s.Interface = int64(sp.MyASN), int64(sp.PeerASN), sp.PeerAddress, sp.Interface
	if sp.DynamicASN != "" {
		s.PeerASN, s.DynamicASN = 0, sp.DynamicASN
	}
	if sp.LocalASN != 0 {
		s.MyASN = int64(sp.LocalASN)
		c.rep.add(Note, who, "spec.localASN", "Herald's myASN is set per session: myASN %d here, the AS the router sees and the only AS in the routes' path, as with MetalLB's local-as %d no-prepend replace-as", sp.LocalASN, sp.LocalASN)
	}
	if sp.PeerPort != 0 {
		s.PeerPort = int32(sp.PeerPort)
	}
	peerIP, _ := netip.ParseAddr(sp.PeerAddress)
	if sp.Interface != "" && sp.SourceAddress != "" {
		c.rep.add(Dropped, who, "spec.sourceAddress", "an unnumbered session (spec.interface) runs from the interface's IPv6 link-local address")
	} else if src, err := netip.ParseAddr(sp.SourceAddress); sp.SourceAddress != "" && (err != nil || src.Is4() != peerIP.Is4()) {
		c.rep.add(Dropped, who, "spec.sourceAddress", "%q is not an address of the peer's family", sp.SourceAddress)
	} else {
		s.SourceAddress = sp.SourceAddress
	}
	if sp.RouterID != "" {
		if id, err := netip.ParseAddr(sp.RouterID); err != nil || !id.Is4() {
			c.rep.add(Dropped, who, "spec.routerID", "%q is not an IPv4 address", sp.RouterID)
		} else {
			s.RouterID = sp.RouterID
			c.rep.add(Changed, who, "spec.routerID", "Herald's speaker has one router ID per node: it accepts %s only on a node without IPv4 address or whose IPv4 address it is", sp.RouterID)
		}
	}
	c.timers(who, p, s)
	c.password(who, p, s)
	s.NodeSelectors = sp.NodeSelectors
	s.VRF = sp.VRF
	switch {
	case sp.BFDProfile != "" && sp.VRF != "":
		c.rep.add(Dropped, who, "spec.bfdProfile", "%q: Herald runs no BFD in a VRF (its embedded GoBGP binds BFD to the default VRF); the session in VRF %s runs without BFD", sp.BFDProfile, sp.VRF)
	case sp.BFDProfile != "":
		s.BFDProfile = c.refName(KindBFDProfile, p.object, "spec.bfdProfile", sp.BFDProfile)
	}
	s.GracefulRestart = sp.EnableGracefulRestart
	switch {
	case sp.EBGPMultiHop && sp.Interface != "":
		c.rep.add(Dropped, who, "spec.ebgpMultiHop", "an unnumbered session (spec.interface) is one hop, which Herald's schema requires")
	case sp.EBGPMultiHop && (s.MyASN == s.PeerASN || s.DynamicASN == "internal"):
		c.rep.add(Dropped, who, "spec.ebgpMultiHop", "meaningless on an iBGP session (myASN = peerASN, or dynamicASN internal), which Herald's schema refuses")
	default:
		s.EBGPMultiHop = sp.EBGPMultiHop
	}
	if sp.DisableMP {
		c.rep.add(Note, who, "spec.disableMP", "ignored, as by MetalLB since v0.15")
	}
	// an unnumbered MetalLB session carries both families
	if !sp.DualStackAddressFamily && c.dual && sp.Interface == "" {
		s.AddressFamilies = []string{"IPv4"}
		if peerIP.Is6() {
			s.AddressFamilies = []string{"IPv6"}
		}
	}
	return out
}

// unconvertiblePeer says why a peer cannot be opened by Herald as MetalLB
// opens it ("" when it can).
func unconvertiblePeer(p mlbPeer) string {
	sp := p.Spec
	switch {
	case sp.VRF != "" && !linuxIfName(sp.VRF):
		return fmt.Sprintf("spec.vrf %q is not a Linux interface name (up to 15 letters, digits, '_', '.' or '-')", sp.VRF)
	case sp.Interface != "" && sp.PeerAddress != "":
		return fmt.Sprintf("spec.interface %q and spec.peerAddress %q are both set: MetalLB refuses that too", sp.Interface, sp.PeerAddress)
	case sp.Interface != "" && !interfaceName.MatchString(sp.Interface):
		return fmt.Sprintf("spec.interface %q is not a Linux interface name (1 to 15 letters, digits, '_', '.' or '-')", sp.Interface)
	case sp.Interface != "" && sp.VRF != "":
		return fmt.Sprintf("spec.interface %q with spec.vrf %q: Herald's unnumbered sessions run in the default VRF", sp.Interface, sp.VRF)
	case sp.DynamicASN != "" && sp.DynamicASN != "internal" && sp.DynamicASN != "external":
		return fmt.Sprintf("spec.dynamicASN %q is neither internal nor external", sp.DynamicASN)
	case sp.DynamicASN != "" && sp.PeerASN != 0:
		return fmt.Sprintf("spec.dynamicASN %q and spec.peerASN %d are both set: MetalLB refuses that too", sp.DynamicASN, sp.PeerASN)
	case sp.LocalASN != 0 && (sp.DynamicASN == "internal" || sp.DynamicASN == "" && sp.PeerASN == sp.MyASN):
		return fmt.Sprintf("spec.localASN %d on an iBGP session: MetalLB refuses that too", sp.LocalASN)
	case sp.LocalASN != 0 && sp.DynamicASN == "" && sp.PeerASN == sp.LocalASN:
		return fmt.Sprintf("spec.localASN %d equals spec.peerASN: as Herald's myASN it would make the session iBGP", sp.LocalASN)
	case sp.LocalASN == 1<<32-1:
		return fmt.Sprintf("spec.localASN %d is outside Herald's range 1-4294967294", sp.LocalASN)
	case sp.MyASN == 0 || sp.MyASN == 1<<32-1:
		return fmt.Sprintf("spec.myASN %d is outside Herald's range 1-4294967294", sp.MyASN)
	case sp.DynamicASN == "" && (sp.PeerASN == 0 || sp.PeerASN == 1<<32-1):
		return fmt.Sprintf("spec.peerASN %d is outside Herald's range 1-4294967294", sp.PeerASN)
	}
	if _, err := netip.ParseAddr(sp.PeerAddress); sp.Interface == "" && (err != nil || sp.PeerAddress == "") {
		return fmt.Sprintf("spec.peerAddress %q is not an IP address", sp.PeerAddress)
	}
	return ""
}

// linuxIfName is Herald's schema for spec.vrf: a Linux interface name.
func linuxIfName(s string) bool {
	if len(s) == 0 || len(s) > 15 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// timers converts hold, keepalive and connect times to Herald's whole
// seconds and ranges.
func (c *converter) timers(who string, p mlbPeer, s *v1beta1.BGPPeerSpec) {
	sp := p.Spec
	hold := 90 * time.Second
	if d := sp.HoldTime; d != nil {
		switch {
		case d.Duration%time.Second != 0:
			c.rep.add(Dropped, who, "spec.holdTime", "%s is not whole seconds; Herald's default 90s applies", d.Duration)
		case d.Duration < 3*time.Second || d.Duration > 65535*time.Second:
			c.rep.add(Dropped, who, "spec.holdTime", "%s is outside Herald's 3s-65535s (GoBGP does not run without keepalives); Herald's default 90s applies", d.Duration)
		default:
			s.HoldTime, hold = &metav1.Duration{Duration: d.Duration}, d.Duration
		}
	}
	if d := sp.KeepaliveTime; d != nil {
		switch {
		case d.Duration%time.Second != 0 || d.Duration < time.Second:
			c.rep.add(Dropped, who, "spec.keepaliveTime", "%s is not a whole number of seconds of at least 1s; Herald uses holdTime/3", d.Duration)
		case d.Duration >= hold:
			c.rep.add(Dropped, who, "spec.keepaliveTime", "%s is not below the hold time %s; Herald uses holdTime/3", d.Duration, hold)
		default:
			s.KeepaliveTime = &metav1.Duration{Duration: d.Duration}
		}
	}
	if d := sp.ConnectTime; d != nil {
		switch {
		case d.Duration%time.Second != 0 || d.Duration > 65535*time.Second:
			c.rep.add(Dropped, who, "spec.connectTime", "%s is not whole seconds up to 65535s; Herald's default 5s applies", d.Duration)
		case d.Duration < 2*time.Second:
			s.ConnectTime = &metav1.Duration{Duration: 2 * time.Second}
			c.rep.add(Changed, who, "spec.connectTime", "%s raised to 2s, Herald's minimum", d.Duration)
		default:
			s.ConnectTime = &metav1.Duration{Duration: d.Duration}
		}
	}
}

// password carries the TCP MD5 password over: a plain one as it is, a
// Secret reference as the name of a Secret Herald reads from its own
// namespace, recorded in the report as a Secret to copy.
func (c *converter) password(who string, p mlbPeer, s *v1beta1.BGPPeerSpec) {
	sp := p.Spec
	if sp.PasswordSecret == nil || sp.PasswordSecret.Name == "" {
		s.Password = sp.Password
		return
	}
	if sp.Password != "" {
		c.rep.add(Dropped, who, "spec.password", "both password and passwordSecret are set; the Secret is kept")
	}
	from := secretRef{Namespace: sp.PasswordSecret.Namespace, Name: sp.PasswordSecret.Name}
	if from.Namespace == "" {
		from.Namespace = p.Metadata.Namespace
	}
	to := c.secretName(from)
	s.PasswordSecret = to
	c.rep.add(Note, who, "spec.passwordSecret", "Secret %s/%s is read by Herald as %s/%s (key \"password\"): copy it", from.Namespace, from.Name, c.opts.HeraldNamespace, to)
}

// secretName is the name in Herald's namespace of a MetalLB Secret,
// recorded once in the report's list of Secrets to copy.
func (c *converter) secretName(from secretRef) string {
	for _, s := range c.rep.Secrets {
		if s.FromNamespace == from.Namespace && s.FromName == from.Name {
			return s.ToName
		}
	}
	name := from.Name
	for _, s := range c.rep.Secrets {
		if s.ToName == name {
			name = objectName(from.Namespace + "-" + from.Name)
		}
	}
	c.rep.Secrets = append(c.rep.Secrets, SecretCopy{FromNamespace: from.Namespace, FromName: from.Name, ToNamespace: c.opts.HeraldNamespace, ToName: name})
	return name
}
