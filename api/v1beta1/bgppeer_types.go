package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BGPPeer is a BGP router the speakers of the selected nodes peer with.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hpeer,categories=herald
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.peerAddress`
// +kubebuilder:printcolumn:name="Interface",type=string,JSONPath=`.spec.interface`,priority=1
// +kubebuilder:printcolumn:name="Peer ASN",type=integer,JSONPath=`.spec.peerASN`
// +kubebuilder:printcolumn:name="Dynamic ASN",type=string,JSONPath=`.spec.dynamicASN`,priority=1
// +kubebuilder:printcolumn:name="Passive",type=boolean,JSONPath=`.spec.passive`,priority=1
// +kubebuilder:printcolumn:name="My ASN",type=integer,JSONPath=`.spec.myASN`
// +kubebuilder:printcolumn:name="Port",type=integer,JSONPath=`.spec.peerPort`,priority=1
// +kubebuilder:printcolumn:name="VRF",type=string,JSONPath=`.spec.vrf`,priority=1
// +kubebuilder:printcolumn:name="BFD Profile",type=string,JSONPath=`.spec.bfdProfile`
// +kubebuilder:printcolumn:name="Families",type=string,JSONPath=`.spec.addressFamilies`,priority=1
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Configured",type=string,JSONPath=`.status.conditions[?(@.type=="SessionsConfigured")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BGPPeer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BGPPeerSpec `json:"spec"`
	// +optional
	Status BGPPeerStatus `json:"status,omitempty"`
}

// BGPPeerSpec describes one BGP session, opened by the speaker of every
// selected node.
//
// +kubebuilder:validation:XValidation:rule="!has(self.password) || !has(self.passwordSecret)",message="spec.password and spec.passwordSecret are mutually exclusive: keep the Secret"
// +kubebuilder:validation:XValidation:rule="!has(self.keepaliveTime) || duration(self.keepaliveTime) < (has(self.holdTime) ? duration(self.holdTime) : duration('90s'))",message="spec.keepaliveTime must be less than spec.holdTime (90s when unset)"
// +kubebuilder:validation:XValidation:rule="has(self.peerASN) != has(self.dynamicASN)",message="spec.peerASN and spec.dynamicASN are mutually exclusive, and one of them is required"
// +kubebuilder:validation:XValidation:rule="!has(self.ebgpMultiHop) || !self.ebgpMultiHop || (has(self.peerASN) ? self.myASN != self.peerASN : self.dynamicASN == 'external')",message="spec.ebgpMultiHop applies only to eBGP sessions (myASN != peerASN, or dynamicASN external)"
// +kubebuilder:validation:XValidation:rule="!has(self.vrf) || !has(self.passive) || !self.passive",message="spec.passive is not supported with spec.vrf: the node's BGP listener is in the default VRF"
// +kubebuilder:validation:XValidation:rule="!has(self.vrf) || !has(self.bfdProfile)",message="spec.bfdProfile is not supported with spec.vrf: the embedded BGP server runs BFD in the default VRF"
// +kubebuilder:validation:XValidation:rule="has(self.peerAddress) != has(self.interface)",message="spec.peerAddress and spec.interface are mutually exclusive, and one of them is required"
// +kubebuilder:validation:XValidation:rule="!has(self.sourceAddress) || !has(self.peerAddress) || ip(self.sourceAddress).family() == ip(self.peerAddress).family()",message="spec.sourceAddress must be of the same IP family as spec.peerAddress"
// +kubebuilder:validation:XValidation:rule="!has(self.interface) || !has(self.sourceAddress)",message="spec.sourceAddress does not apply with spec.interface: the session uses the interface's IPv6 link-local address"
// +kubebuilder:validation:XValidation:rule="!has(self.interface) || !has(self.ebgpMultiHop) || !self.ebgpMultiHop",message="spec.ebgpMultiHop does not apply with spec.interface: an unnumbered session is one hop"
// +kubebuilder:validation:XValidation:rule="!has(self.interface) || !has(self.passive) || !self.passive",message="spec.passive does not apply with spec.interface: the speaker dials the neighbour learnt on the interface"
// +kubebuilder:validation:XValidation:rule="!has(self.interface) || !has(self.vrf)",message="spec.vrf is not supported with spec.interface: an unnumbered session runs in the default VRF"
type BGPPeerSpec struct {
	// MyASN is the speaker's AS number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967294
	MyASN int64 `json:"myASN"`

	// PeerASN is the router's AS number: equal to myASN for iBGP.
	// Exclusive with dynamicASN; one of the two is required.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967294
	// +optional
	PeerASN int64 `json:"peerASN,omitempty"`

	// DynamicASN accepts the router's AS number whatever it is within a
	// class, instead of a fixed peerASN: "internal" (the router's AS must
	// be myASN) or "external" (any other AS). The AS the session came up
	// with is in the node's SpeakerStatus; a router of the other class is
	// refused there with a message.
	// +kubebuilder:validation:Enum=internal;external
	// +optional
	DynamicASN string `json:"dynamicASN,omitempty"`

	// Passive makes the speaker wait for the router to connect instead of
	// dialing it (routers that only dial out, BGP listen ranges). The node
	// then listens for BGP on the speaker's --bgp-listen-port (179) and
	// --bgp-listen-addresses (the node's addresses), only while some peer
	// of the node is passive; peerPort is not used.
	// +optional
	Passive bool `json:"passive,omitempty"`

	// PeerAddress is the router's IPv4 or IPv6 address. Exclusive with
	// interface; one of the two is required.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="spec.peerAddress must be an IPv4 or IPv6 address"
	// +optional
	PeerAddress string `json:"peerAddress,omitempty"`

	// Interface makes the session unnumbered: instead of an address, the
	// node's interface toward the router (a point-to-point link). The
	// session runs between the interface's IPv6 link-local address and
	// the one IPv6 link-local neighbour the node learns on it (from the
	// router's Router Advertisements; the speaker solicits them). IPv4
	// routes are carried with the node's IPv6 link-local next hop
	// (RFC 8950 extended next hop), IPv6 routes natively. Nodes without
	// the interface, or with no neighbour on it, say so in their
	// SpeakerStatus. Exclusive with peerAddress, sourceAddress,
	// ebgpMultiHop and passive.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_.-]+$') && self != '.' && self != '..'",message="spec.interface must be a Linux interface name: 1 to 15 letters, digits, '_', '.' or '-'"
	// +optional
	Interface string `json:"interface,omitempty"`

	// PeerPort is the router's BGP port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=179
	// +optional
	PeerPort int32 `json:"peerPort,omitempty"`

	// SourceAddress is the local address of the session. Default: the
	// node's address on the route to the peer.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="spec.sourceAddress must be an IPv4 or IPv6 address"
	// +optional
	SourceAddress string `json:"sourceAddress,omitempty"`

	// RouterID is the BGP identifier. Default: the node's IPv4 address,
	// which is also the only value accepted on a node that has one (one
	// embedded BGP server per node has one router ID); set it for nodes
	// without an IPv4 address.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="spec.routerID must be an IPv4 address"
	// +optional
	RouterID string `json:"routerID,omitempty"`

	// HoldTime of the session, in whole seconds, at least 3s. Default 90s.
	// (BGP allows 0, "no keepalives"; GoBGP, which Herald embeds, does not.)
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$')",message="spec.holdTime must be whole seconds, e.g. 9s or 1m30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('3s') && duration(self) <= duration('65535s')",message="spec.holdTime must be between 3s and 65535s"
	// +optional
	HoldTime *metav1.Duration `json:"holdTime,omitempty"`

	// KeepaliveTime between KEEPALIVE messages, in whole seconds.
	// Default: holdTime/3.
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$')",message="spec.keepaliveTime must be whole seconds, e.g. 3s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.keepaliveTime must be at least 1s"
	// +optional
	KeepaliveTime *metav1.Duration `json:"keepaliveTime,omitempty"`

	// ConnectTime is how long to wait between attempts to connect, in whole
	// seconds. Default 5s.
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+h)?([0-9]+m)?([0-9]+s)?$')",message="spec.connectTime must be whole seconds, e.g. 5s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('2s') && duration(self) <= duration('65535s')",message="spec.connectTime must be between 2s and 65535s"
	// +optional
	ConnectTime *metav1.Duration `json:"connectTime,omitempty"`

	// PasswordSecret names a Secret in Herald's namespace whose key
	// "password" holds the TCP MD5 password of the session.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	PasswordSecret string `json:"passwordSecret,omitempty"`

	// Password is a plain TCP MD5 password, for migration from
	// configurations that keep it in the object. Prefer passwordSecret.
	// +kubebuilder:validation:MaxLength=80
	// +optional
	Password string `json:"password,omitempty"`

	// EBGPMultiHop lets an eBGP session cross more than one hop (TTL 255).
	// +optional
	EBGPMultiHop bool `json:"ebgpMultiHop,omitempty"`

	// NodeSelectors limit the nodes that peer with this router; empty
	// means every node.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// BFDProfile names a BFDProfile: BFD then tears the session down fast
	// when the router stops answering. The router must list the nodes as
	// static neighbors (not a listen range) for BFD to be stable.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BFDProfile string `json:"bfdProfile,omitempty"`

	// GracefulRestart asks the router to keep this node's routes while the
	// speaker restarts (RFC 4724).
	// +optional
	GracefulRestart bool `json:"gracefulRestart,omitempty"`

	// VRF names a Linux VRF device on the node (ip link add <name> type
	// vrf): the session is bound to it (SO_BINDTODEVICE) and routed by its
	// table, and the routes' next hops are the node's addresses on the
	// interfaces enslaved to it instead of the node's address. A node
	// without this VRF opens no session to this peer and says so in its
	// SpeakerStatus. Empty: the default VRF.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]*$')",message="spec.vrf must be a Linux interface name: up to 15 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
	// +optional
	VRF string `json:"vrf,omitempty"`
	// AddressFamilies are the address families the session carries:
	// "IPv4", "IPv6" or both, whatever the family of peerAddress (MP-BGP).
	// Default: the families of the pools, so both ride on every session
	// when the pools hold both. Set it to the peer's own family for one
	// session per family toward a router (MetalLB's default, without
	// dualStackAddressFamily).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=IPv4;IPv6
	// +listType=set
	// +optional
	AddressFamilies []string `json:"addressFamilies,omitempty"`
}

// BGPPeerList is a list of BGPPeer.
//
// +kubebuilder:object:root=true
type BGPPeerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BGPPeer `json:"items"`
}
