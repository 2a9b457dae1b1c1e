package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BGPAdvertisement advertises addresses of some pools to BGP peers, with
// attributes.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hbgpadv,categories=herald
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="IP Address Pools",type=string,JSONPath=`.spec.ipAddressPools`
// +kubebuilder:printcolumn:name="Peers",type=string,JSONPath=`.spec.peers`
// +kubebuilder:printcolumn:name="Communities",type=string,JSONPath=`.spec.communities`,priority=1
// +kubebuilder:printcolumn:name="Aggregation",type=integer,JSONPath=`.spec.aggregationLength`,priority=1
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BGPAdvertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec BGPAdvertisementSpec `json:"spec,omitempty"`
	// +optional
	Status BGPAdvertisementStatus `json:"status,omitempty"`
}

// BGPAdvertisementSpec selects what is advertised, by which nodes, to which
// peers, and with which attributes. With neither ipAddressPools nor
// ipAddressPoolSelectors every pool is selected.
type BGPAdvertisementSpec struct {
	// IPAddressPools names the pools to advertise.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	IPAddressPools []string `json:"ipAddressPools,omitempty"`

	// IPAddressPoolSelectors select pools to advertise by label.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`

	// NodeSelectors limit the nodes that advertise.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// ServiceSelectors limit the Services advertised.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`

	// Peers names the BGPPeers that receive these routes; empty means all.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Peers []string `json:"peers,omitempty"`

	// AggregationLength advertises IPv4 addresses as this prefix length
	// instead of /32 (the aggregate stays while any address in it is
	// announced).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:default=32
	// +optional
	AggregationLength *int32 `json:"aggregationLength,omitempty"`

	// AggregationLengthV6 is the same for IPv6 (default /128).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:default=128
	// +optional
	AggregationLengthV6 *int32 `json:"aggregationLengthV6,omitempty"`

	// LocalPref is the LOCAL_PREF attribute, sent to iBGP peers only.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	// +optional
	LocalPref *int64 `json:"localPref,omitempty"`

	// Communities attached to the routes: standard "a:b" (16-bit each),
	// large "large:a:b:c" (32-bit each), or the name of an alias defined in
	// a Community object.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=40
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[0-9]{1,5}:[0-9]{1,5}$') ? self.split(':').all(p, int(p) <= 65535) : self.matches('^large:[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$') ? self.split(':').all(p, p == 'large' || int(p) <= 4294967295) : self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.communities: each entry must be a standard community a:b (each part 0-65535), a large community large:a:b:c (each part 0-4294967295), or the name of a Community alias"
	// +listType=set
	// +optional
	Communities []string `json:"communities,omitempty"`

	// LinkBandwidth attaches the BGP link-bandwidth extended community
	// (non-transitive, type 0x40 sub-type 0x04) to the routes of
	// externalTrafficPolicy: Local Services, so that a router doing
	// weighted ECMP sends each node traffic in proportion to its ready
	// local endpoints. None (the default) sends no such community;
	// ReadyLocalEndpoints weighs each node's route by the Service's ready
	// endpoints on that node, as 1 Mbit/s (125,000 bytes/s) per endpoint.
	// Cluster-policy Services are never weighted. The router must be told
	// to use the community (FRR: bgp bestpath bandwidth; see the docs).
	// +kubebuilder:validation:XValidation:rule="self in ['None', 'ReadyLocalEndpoints']",message="spec.linkBandwidth: must be None or ReadyLocalEndpoints"
	// +kubebuilder:default=None
	// +optional
	LinkBandwidth LinkBandwidthMode `json:"linkBandwidth,omitempty"`
}

// LinkBandwidthMode says whether and how routes carry the link-bandwidth
// extended community. (None, not Off: YAML 1.1 reads an unquoted Off as
// false.)
type LinkBandwidthMode string

// The values of LinkBandwidthMode.
const (
	LinkBandwidthNone                LinkBandwidthMode = "None"
	LinkBandwidthReadyLocalEndpoints LinkBandwidthMode = "ReadyLocalEndpoints"
)

// BGPAdvertisementList is a list of BGPAdvertisement.
//
// +kubebuilder:object:root=true
type BGPAdvertisementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BGPAdvertisement `json:"items"`
}
