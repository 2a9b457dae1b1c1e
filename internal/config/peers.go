package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

const kindPeer = "BGPPeer"

// Defaults of BGP sessions.
const (
	DefaultHoldTime    = 90 * time.Second
	DefaultConnectTime = 5 * time.Second
	// PasswordKey is the key of a BGPPeer's password Secret.
	PasswordKey = "password"
)

func buildPeers(in []*v1beta1.BGPPeer, secrets []*corev1.Secret, cfg *Config, ps *problems) []*Peer {
	byName := map[string]*corev1.Secret{}
	for _, s := range secrets {
		byName[s.Name] = s
	}
	sorted := append([]*v1beta1.BGPPeer(nil), in...)
	sort.SliceStable(sorted, func(i, j int) bool {
		ti, tj := sorted[i].CreationTimestamp.Time, sorted[j].CreationTimestamp.Time
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out []*Peer
	seen := map[string]string{} // address + selectors -> peer name
	for _, obj := range sorted {
		p, ok := parsePeer(obj, byName, cfg, ps)
		if !ok {
			continue
		}
		key := p.target() + "|" + fmt.Sprint(obj.Spec.NodeSelectors)
		if prev, dup := seen[key]; dup {
			field, what := "spec.peerAddress", "address"
			if p.Interface != "" {
				field, what = "spec.interface", "interface"
			}
			ps.add(Problem{Kind: kindPeer, Name: obj.Name, Field: field, Reason: ReasonDuplicatePeer, Ignored: true, ConflictsWith: prev,
				Message: fmt.Sprintf("BGPPeer %s, which is older, already peers with %s from the same nodes; a node holds one session per %s", prev, p.target(), what)})
			continue
		}
		seen[key] = obj.Name
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func parsePeer(obj *v1beta1.BGPPeer, secrets map[string]*corev1.Secret, cfg *Config, ps *problems) (*Peer, bool) {
	s := obj.Spec
	ignore := func(field, reason, msg string) (*Peer, bool) {
		ps.add(Problem{Kind: kindPeer, Name: obj.Name, Field: field, Reason: reason, Message: msg, Ignored: true})
		return nil, false
	}
	p := &Peer{
		Name: obj.Name, MyASN: uint32(s.MyASN), PeerASN: uint32(s.PeerASN), Port: uint16(s.PeerPort),
		DynamicASN: DynamicASN(s.DynamicASN), Passive: s.Passive, VRF: s.VRF,
		EBGPMultiHop: s.EBGPMultiHop, GracefulRestart: s.GracefulRestart, Password: s.Password,
		HoldTime: duration(s.HoldTime, DefaultHoldTime), ConnectTime: duration(s.ConnectTime, DefaultConnectTime),
	}
	if p.Port == 0 {
		p.Port = 179
	}
	p.KeepaliveTime = duration(s.KeepaliveTime, p.HoldTime/3)
	if msg := checkASN(s); msg != "" {
		return ignore(asnField(s), ReasonInvalidField, msg)
	}
	if msg := checkVRF(s); msg != "" {
		return ignore("spec.vrf", ReasonInvalidField, msg)
	}
	if field, msg := checkUnnumbered(s); msg != "" {
		return ignore(field, ReasonInvalidField, msg)
	}
	p.Interface = s.Interface
	var err error
	if s.Interface == "" {
		if p.Address, err = netip.ParseAddr(s.PeerAddress); err != nil {
			return ignore("spec.peerAddress", ReasonInvalidField, fmt.Sprintf("%q is not an IP address", s.PeerAddress))
		}
	}
	if s.SourceAddress != "" {
		if p.SourceAddress, err = netip.ParseAddr(s.SourceAddress); err != nil || p.SourceAddress.Is4() != p.Address.Is4() {
			return ignore("spec.sourceAddress", ReasonInvalidField, fmt.Sprintf("%q is not an address of the peer's family", s.SourceAddress))
		}
	}
	if s.RouterID != "" {
		if p.RouterID, err = netip.ParseAddr(s.RouterID); err != nil || !p.RouterID.Is4() {
			return ignore("spec.routerID", ReasonInvalidField, fmt.Sprintf("%q is not an IPv4 address", s.RouterID))
		}
	}
	if p.NodeSelectors, err = selectors(s.NodeSelectors, "spec.nodeSelectors"); err != nil {
		return ignore(err.(fieldError).field, ReasonInvalidField, err.Error())
	}
	if s.PasswordSecret != "" {
		secret, ok := secrets[s.PasswordSecret]
		if !ok {
			return ignore("spec.passwordSecret", ReasonSecretNotFound,
				fmt.Sprintf("Secret %s does not exist in Herald's namespace (a peer never valid before opens no session without it)", s.PasswordSecret))
		}
		pw, ok := secret.Data[PasswordKey]
		if !ok || len(pw) == 0 {
			return ignore("spec.passwordSecret", ReasonSecretNotFound,
				fmt.Sprintf("Secret %s has no key %q (a peer never valid before opens no session without it)", s.PasswordSecret, PasswordKey))
		}
		p.Password = string(pw)
	}
	if p.AddressFamilies, err = addressFamilies(s.AddressFamilies); err != nil {
		return ignore("spec.addressFamilies", ReasonInvalidField, err.Error())
	}
	if s.BFDProfile != "" {
		if b, ok := cfg.BFDProfiles[s.BFDProfile]; ok {
			p.BFD = b
		} else {
			ps.add(Problem{Kind: kindPeer, Name: obj.Name, Field: "spec.bfdProfile", Reason: ReasonBFDNotFound,
				Message: fmt.Sprintf("BFDProfile %s does not exist; the session runs without BFD until it does", s.BFDProfile)})
		}
	}
	return p, true
}

// addressFamilies checks spec.addressFamilies (the schema refuses the
// same) and returns them sorted, each once.
func addressFamilies(in []string) ([]string, error) {
	var out []string
	for _, f := range in {
		if f != string(corev1.IPv4Protocol) && f != string(corev1.IPv6Protocol) {
			return nil, fmt.Errorf("%q is neither IPv4 nor IPv6", f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkASN says what is wrong with a spec's peerASN and dynamicASN: the
// schema refuses the same, but objects written before it still reach here.
func checkASN(s v1beta1.BGPPeerSpec) string {
	switch {
	case s.PeerASN != 0 && s.DynamicASN != "":
		return "spec.peerASN and spec.dynamicASN are mutually exclusive"
	case s.PeerASN == 0 && s.DynamicASN == "":
		return "one of spec.peerASN and spec.dynamicASN is required"
	case s.DynamicASN != "" && s.DynamicASN != string(DynamicInternal) && s.DynamicASN != string(DynamicExternal):
		return fmt.Sprintf("spec.dynamicASN %q is neither internal nor external", s.DynamicASN)
	}
	return ""
}

// checkVRF says what is wrong with a spec's vrf: the schema refuses the
// same, but objects written before it still reach here.
func checkVRF(s v1beta1.BGPPeerSpec) string {
	switch {
	case s.VRF == "":
		return ""
	case !vrfName.MatchString(s.VRF):
		return fmt.Sprintf("spec.vrf %q is not a Linux interface name (up to 15 letters, digits, '_', '.' or '-')", s.VRF)
	case s.Passive:
		return "spec.passive is not supported with spec.vrf: the node's BGP listener is in the default VRF"
	case s.BFDProfile != "":
		return "spec.bfdProfile is not supported with spec.vrf: the embedded BGP server runs BFD in the default VRF"
	}
	return ""
}

// vrfName is the schema's pattern for spec.vrf.
var vrfName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$`)

// checkUnnumbered says what is wrong with a spec's interface and the
// fields it excludes, and names the field: the schema refuses the same,
// but objects written before it still reach here.
func checkUnnumbered(s v1beta1.BGPPeerSpec) (string, string) {
	switch {
	case s.Interface == "" && s.PeerAddress == "":
		return "spec.peerAddress", "one of spec.peerAddress and spec.interface is required"
	case s.Interface == "":
		return "", ""
	case s.PeerAddress != "":
		return "spec.interface", "spec.peerAddress and spec.interface are mutually exclusive"
	case !validInterfaceName(s.Interface):
		return "spec.interface", fmt.Sprintf("%q is not a Linux interface name", s.Interface)
	case s.SourceAddress != "":
		return "spec.sourceAddress", "spec.sourceAddress does not apply with spec.interface"
	case s.EBGPMultiHop:
		return "spec.ebgpMultiHop", "spec.ebgpMultiHop does not apply with spec.interface"
	case s.Passive:
		return "spec.passive", "spec.passive does not apply with spec.interface"
	case s.VRF != "":
		return "spec.vrf", "spec.vrf is not supported with spec.interface: an unnumbered session runs in the default VRF"
	}
	return "", ""
}

// validInterfaceName: 1 to 15 characters among letters, digits, '_', '.'
// and '-', not "." or "..", as the schema has it.
func validInterfaceName(n string) bool {
	if len(n) == 0 || len(n) > 15 || n == "." || n == ".." {
		return false
	}
	for _, c := range n {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// target is what a node dials: the peer's address, or its interface.
func (p *Peer) target() string {
	if p.Interface != "" {
		return "interface " + p.Interface
	}
	return p.Address.String()
}

func asnField(s v1beta1.BGPPeerSpec) string {
	if s.DynamicASN != "" {
		return "spec.dynamicASN"
	}
	return "spec.peerASN"
}

func duration(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func buildBFDProfiles(in []*v1beta1.BFDProfile) map[string]*BFDProfile {
	out := map[string]*BFDProfile{}
	for _, obj := range in {
		out[obj.Name] = &BFDProfile{
			Name:             obj.Name,
			ReceiveInterval:  millis(obj.Spec.ReceiveInterval, 300),
			TransmitInterval: millis(obj.Spec.TransmitInterval, 300),
			DetectMultiplier: uint32(intOr(obj.Spec.DetectMultiplier, 3)),
		}
	}
	return out
}

func millis(v *int32, def int32) time.Duration {
	return time.Duration(intOr(v, def)) * time.Millisecond
}

func intOr(v *int32, def int32) int32 {
	if v == nil {
		return def
	}
	return *v
}
