package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SpeakerStatus is what one node's speaker actually announces: the
// addresses it answers ARP/NDP for and its BGP sessions with the prefixes
// it advertises on each. There is one per node, named after the node
// (<node>.<installation> for a second installation, labelled
// herald.dev/installation) and owned by the Node (the garbage collector
// deletes it with the node). The speaker writes it when what it
// announces changes, at most once per --status-interval; it is not a
// heartbeat (the liveness Lease herald-speaker-<node> is). The
// controller reads it for the Service condition herald.dev/Announced.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hspk,categories=herald
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.pod`
// +kubebuilder:printcolumn:name="L2",type=integer,JSONPath=`.status.summary.l2Addresses`,description="Addresses answered in L2 mode"
// +kubebuilder:printcolumn:name="Sessions",type=string,JSONPath=`.status.summary.sessions`,description="BGP sessions established/configured"
// +kubebuilder:printcolumn:name="Prefixes",type=integer,JSONPath=`.status.summary.prefixes`,description="Distinct prefixes advertised over BGP"
// +kubebuilder:printcolumn:name="Draining",type=boolean,JSONPath=`.status.draining`,description="The node carries the drain label herald.dev/drain"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SpeakerStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status SpeakerStatusStatus `json:"status,omitempty"`
}

// Limits of one SpeakerStatus. A speaker that announces more lists the
// first ones (sorted) and sets status.truncated.
const (
	MaxSpeakerL2Addresses = 4096
	MaxSpeakerSessions    = 64
	MaxSessionPrefixes    = 4096
)

// SpeakerStatusStatus is written by the speaker of the node.
type SpeakerStatusStatus struct {
	// Pod is the speaker Pod that wrote this.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Pod string `json:"pod,omitempty"`

	// Summary counts what the lists hold, for kubectl get.
	// +optional
	Summary SpeakerSummary `json:"summary,omitempty"`

	// L2 lists the addresses this node answers ARP (IPv4) or NDP (IPv6)
	// for, sorted by address. An address handed over to another node is
	// no longer listed, nor one with no usable interface.
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=4096
	// +optional
	L2 []L2AnnouncementStatus `json:"l2,omitempty"`

	// BGP lists this node's BGP sessions, sorted by BGPPeer name.
	// +listType=map
	// +listMapKey=peer
	// +kubebuilder:validation:MaxItems=64
	// +optional
	BGP []BGPSessionStatus `json:"bgp,omitempty"`

	// Truncated is true when the speaker announces more than the lists
	// may hold; the counts in summary are the full ones.
	// +optional
	Truncated bool `json:"truncated,omitempty"`

	// Draining is true when the node carries the drain label
	// herald.dev/drain: it is not eligible to announce, hands its L2
	// addresses over and withdraws its BGP paths (after the
	// graceful-shutdown wait). kubectl herald drain waits until a
	// draining node's L2 list and prefixes are empty.
	// +optional
	Draining bool `json:"draining,omitempty"`
}

// SpeakerSummary are counts for the printer columns.
type SpeakerSummary struct {
	// L2Addresses is the number of addresses answered in L2 mode.
	L2Addresses int32 `json:"l2Addresses"`
	// Sessions is "established/configured", e.g. "1/2".
	// +kubebuilder:validation:MaxLength=16
	Sessions string `json:"sessions"`
	// Prefixes is the number of distinct prefixes advertised to some
	// established session.
	Prefixes int32 `json:"prefixes"`
}

// L2AnnouncementStatus is one address answered in L2 mode.
type L2AnnouncementStatus struct {
	// Address is the IPv4 or IPv6 address.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="address must be an IPv4 or IPv6 address"
	Address string `json:"address"`
	// Interfaces it is answered on.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=15
	// +listType=set
	Interfaces []string `json:"interfaces"`
	// Since is when this node started answering for it.
	Since metav1.Time `json:"since"`
}

// BGPSessionStatus is one BGP session of this node.
type BGPSessionStatus struct {
	// Peer is the BGPPeer's name.
	// +kubebuilder:validation:MaxLength=253
	Peer string `json:"peer"`
	// PeerAddress is the router's address.
	// +kubebuilder:validation:MaxLength=45
	// +optional
	PeerAddress string `json:"peerAddress,omitempty"`
	// Interface is the BGPPeer's interface for an unnumbered session;
	// peerAddress is then the IPv6 link-local neighbour learnt on it,
	// empty while none is.
	// +kubebuilder:validation:MaxLength=15
	// +optional
	Interface string `json:"interface,omitempty"`
	// State is the BGP state: Idle, Connect, Active, OpenSent,
	// OpenConfirm, Established, or NotConfigured when the session was
	// refused.
	// +kubebuilder:validation:MaxLength=32
	State string `json:"state"`
	// Since is when State last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// PeerASN is the router's AS number the session last came up with
	// (with the BGPPeer's dynamicASN, the one the router sent).
	// +optional
	PeerASN int64 `json:"peerASN,omitempty"`
	// Message says why the session is not up when the speaker knows: a
	// refused configuration, or a router AS of the wrong class.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
	// Prefixes advertised on this session, sorted; empty unless
	// Established.
	// +kubebuilder:validation:MaxItems=4096
	// +kubebuilder:validation:items:MaxLength=49
	// +listType=set
	// +optional
	Prefixes []string `json:"prefixes,omitempty"`
}

// SpeakerStatusList is a list of SpeakerStatus.
//
// +kubebuilder:object:root=true
type SpeakerStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SpeakerStatus `json:"items"`
}

// The speakers' liveness Leases, which the controller reads too: every
// synced speaker renews SpeakerLeasePrefix+<node> in Herald's namespace,
// labelled LabelSpeakerLiveness=true.
const (
	SpeakerLeasePrefix   = "herald-speaker-"
	LabelSpeakerLiveness = "herald.dev/speaker-liveness"
)

// Reasons of the Service condition herald.dev/Announced besides those of
// internal/announce (Announced, NoAdvertisementMatches, NoEligibleNode,
// NoReadyEndpoint).
const (
	// ReasonNotConfirmed (status Unknown): a node is expected to announce
	// an address and its speaker has not reported it in its SpeakerStatus
	// yet.
	ReasonNotConfirmed = "NotConfirmed"
	// ReasonOwnerSpeakerDown (status False): the node that should announce
	// an address has no live speaker (its liveness Lease expired or is
	// missing), and no other node reports the address.
	ReasonOwnerSpeakerDown = "OwnerSpeakerDown"
)

// AnnounceHoldLease is the Lease in Herald's namespace that holds every
// speaker's announcements: while it exists (and, when it has a
// leaseDurationSeconds, until renewTime + duration), speakers answer no
// ARP/NDP and open no BGP session, but stay members and Ready. The takeover
// from MetalLB (kubectl herald migrate --plan) starts Herald's speakers
// under this hold while MetalLB's still announce, and deletes it the
// moment MetalLB's have stopped.
const AnnounceHoldLease = "herald-announce-hold"
