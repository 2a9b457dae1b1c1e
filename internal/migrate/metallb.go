package migrate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetalLB's API group and the kinds the converter reads.
const (
	MetalLBGroup = "metallb.io"

	KindIPAddressPool    = "IPAddressPool"
	KindL2Advertisement  = "L2Advertisement"
	KindBGPPeer          = "BGPPeer"
	KindBGPAdvertisement = "BGPAdvertisement"
	KindCommunity        = "Community"
	KindBFDProfile       = "BFDProfile"
)

// object is what every MetalLB object has.
type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

// mlbPool is MetalLB's IPAddressPool (v1beta1).
type mlbPool struct {
	object `json:",inline"`
	Spec   struct {
		Addresses         []string `json:"addresses"`
		AutoAssign        *bool    `json:"autoAssign,omitempty"`
		AvoidBuggyIPs     bool     `json:"avoidBuggyIPs,omitempty"`
		ServiceAllocation *struct {
			Priority           *int                   `json:"priority,omitempty"`
			Namespaces         []string               `json:"namespaces,omitempty"`
			NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
			ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
		} `json:"serviceAllocation,omitempty"`
	} `json:"spec"`
}

// mlbL2Adv is MetalLB's L2Advertisement (v1beta1).
type mlbL2Adv struct {
	object `json:",inline"`
	Spec   struct {
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Interfaces             []string               `json:"interfaces,omitempty"`
	} `json:"spec"`
}

// mlbBGPAdv is MetalLB's BGPAdvertisement (v1beta1).
type mlbBGPAdv struct {
	object `json:",inline"`
	Spec   struct {
		AggregationLength      *int32                 `json:"aggregationLength,omitempty"`
		AggregationLengthV6    *int32                 `json:"aggregationLengthV6,omitempty"`
		LocalPref              *uint32                `json:"localPref,omitempty"`
		Communities            []string               `json:"communities,omitempty"`
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Peers                  []string               `json:"peers,omitempty"`
	} `json:"spec"`
}

// mlbPeer is MetalLB's BGPPeer: v1beta2, which is v1beta1 plus fields
// (v1beta1's nodeSelectors have the shape of a LabelSelector, and it has
// no passwordSecret).
type mlbPeer struct {
	object `json:",inline"`
	Spec   struct {
		MyASN                  uint32                 `json:"myASN"`
		PeerASN                uint32                 `json:"peerASN,omitempty"`
		DynamicASN             string                 `json:"dynamicASN,omitempty"`
		LocalASN               uint32                 `json:"localASN,omitempty"`
		PeerAddress            string                 `json:"peerAddress,omitempty"`
		Interface              string                 `json:"interface,omitempty"`
		SourceAddress          string                 `json:"sourceAddress,omitempty"`
		PeerPort               uint16                 `json:"peerPort,omitempty"`
		HoldTime               *metav1.Duration       `json:"holdTime,omitempty"`
		KeepaliveTime          *metav1.Duration       `json:"keepaliveTime,omitempty"`
		ConnectTime            *metav1.Duration       `json:"connectTime,omitempty"`
		RouterID               string                 `json:"routerID,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Password               string                 `json:"password,omitempty"`
		PasswordSecret         *secretRef             `json:"passwordSecret,omitempty"`
		BFDProfile             string                 `json:"bfdProfile,omitempty"`
		EnableGracefulRestart  bool                   `json:"enableGracefulRestart,omitempty"`
		EBGPMultiHop           bool                   `json:"ebgpMultiHop,omitempty"`
		VRF                    string                 `json:"vrf,omitempty"`
		DisableMP              bool                   `json:"disableMP,omitempty"`
		DualStackAddressFamily bool                   `json:"dualStackAddressFamily,omitempty"`
	} `json:"spec"`
}

type secretRef struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// mlbCommunity is MetalLB's Community (v1beta1).
type mlbCommunity struct {
	object `json:",inline"`
	Spec   struct {
		Communities []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"communities"`
	} `json:"spec"`
}

// mlbBFD is MetalLB's BFDProfile (v1beta1).
type mlbBFD struct {
	object `json:",inline"`
	Spec   struct {
		ReceiveInterval  *uint32 `json:"receiveInterval,omitempty"`
		TransmitInterval *uint32 `json:"transmitInterval,omitempty"`
		DetectMultiplier *uint32 `json:"detectMultiplier,omitempty"`
		EchoInterval     *uint32 `json:"echoInterval,omitempty"`
		EchoMode         *bool   `json:"echoMode,omitempty"`
		PassiveMode      *bool   `json:"passiveMode,omitempty"`
		MinimumTTL       *uint32 `json:"minimumTtl,omitempty"`
	} `json:"spec"`
}
