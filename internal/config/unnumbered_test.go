package config

import (
	"testing"

	"github.com/herald-lb/herald/api/v1beta1"
)

func TestPeerInterfaceUnnumbered(t *testing.T) {
	unnumbered := func(iface string, more func(*v1beta1.BGPPeerSpec)) func(*v1beta1.BGPPeerSpec) {
		return func(s *v1beta1.BGPPeerSpec) {
			s.PeerAddress, s.Interface = "", iface
			if more != nil {
				more(s)
			}
		}
	}
	in := Input{Peers: []*v1beta1.BGPPeer{
		peerObj("tor", 1, unnumbered("eth1", func(s *v1beta1.BGPPeerSpec) { s.PeerASN, s.DynamicASN = 0, "external" })),
		peerObj("tor-again", 2, unnumbered("eth1", nil)),
		peerObj("both", 0, func(s *v1beta1.BGPPeerSpec) { s.Interface = "eth2" }),
		peerObj("neither", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "" }),
		peerObj("bad-name", 0, unnumbered("eth0/1", nil)),
		peerObj("source", 0, unnumbered("eth3", func(s *v1beta1.BGPPeerSpec) { s.SourceAddress = "2001:db8::11" })),
		peerObj("multihop", 0, unnumbered("eth4", func(s *v1beta1.BGPPeerSpec) { s.EBGPMultiHop = true })),
		peerObj("passive", 0, unnumbered("eth5", func(s *v1beta1.BGPPeerSpec) { s.Passive = true })),
		peerObj("in-vrf", 0, unnumbered("eth6", func(s *v1beta1.BGPPeerSpec) { s.VRF = "red" })),
		peerObj("numbered", 0, func(s *v1beta1.BGPPeerSpec) { s.PeerAddress = "198.51.100.9" }),
	}}
	cfg, ps := Build(in)
	peers := map[string]*Peer{}
	for _, p := range cfg.Peers {
		peers[p.Name] = p
	}
	if p := peers["tor"]; p == nil || p.Interface != "eth1" || p.Address.IsValid() || p.DynamicASN != DynamicExternal {
		t.Errorf("tor: %+v", p)
	}
	if p := peers["numbered"]; p == nil || p.Interface != "" || p.Address.String() != "198.51.100.9" {
		t.Errorf("numbered: %+v", p)
	}
	for _, n := range []string{"tor-again", "both", "neither", "bad-name", "source", "multihop", "passive", "in-vrf"} {
		if _, ok := peers[n]; ok {
			t.Errorf("%s: an invalid or duplicate peer must open no session", n)
		}
	}
	wantProblem(t, ps, "BGPPeer", "tor-again", "spec.interface", ReasonDuplicatePeer, "already peers with interface eth1")
	wantProblem(t, ps, "BGPPeer", "both", "spec.interface", ReasonInvalidField, "mutually exclusive")
	wantProblem(t, ps, "BGPPeer", "neither", "spec.peerAddress", ReasonInvalidField, "one of spec.peerAddress and spec.interface is required")
	wantProblem(t, ps, "BGPPeer", "bad-name", "spec.interface", ReasonInvalidField, "not a Linux interface name")
	wantProblem(t, ps, "BGPPeer", "source", "spec.sourceAddress", ReasonInvalidField, "does not apply with spec.interface")
	wantProblem(t, ps, "BGPPeer", "multihop", "spec.ebgpMultiHop", ReasonInvalidField, "does not apply with spec.interface")
	wantProblem(t, ps, "BGPPeer", "passive", "spec.passive", ReasonInvalidField, "does not apply with spec.interface")
	wantProblem(t, ps, "BGPPeer", "in-vrf", "spec.vrf", ReasonInvalidField, "not supported with spec.interface")
}

func TestValidInterfaceName(t *testing.T) {
	for n, want := range map[string]bool{
		"eth0": true, "enp1s0f0.100": true, "br-lan_1": true, "abcdefghijklmno": true,
		"": false, ".": false, "..": false, "abcdefghijklmnop": false, "eth0/1": false, "eth 0": false, "fe80::1%eth0": false,
	} {
		if got := validInterfaceName(n); got != want {
			t.Errorf("validInterfaceName(%q) = %v, want %v", n, got, want)
		}
	}
}
