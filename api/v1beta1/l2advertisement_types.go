package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// L2Advertisement announces addresses of some pools from one elected node
// with ARP (IPv4) and NDP (IPv6).
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hl2adv,categories=herald
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="IP Address Pools",type=string,JSONPath=`.spec.ipAddressPools`
// +kubebuilder:printcolumn:name="Interfaces",type=string,JSONPath=`.spec.interfaces`
// +kubebuilder:printcolumn:name="Node Selectors",type=string,JSONPath=`.spec.nodeSelectors`,priority=1
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type L2Advertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec L2AdvertisementSpec `json:"spec,omitempty"`
	// +optional
	Status L2AdvertisementStatus `json:"status,omitempty"`
}

// L2AdvertisementSpec selects what is announced in L2 mode, from where.
// With neither ipAddressPools nor ipAddressPoolSelectors every pool is
// selected; with no nodeSelectors every eligible node may announce.
type L2AdvertisementSpec struct {
	// IPAddressPools names the pools to announce.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	IPAddressPools []string `json:"ipAddressPools,omitempty"`

	// IPAddressPoolSelectors select pools to announce by label.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`

	// NodeSelectors limit the nodes that may announce.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	NodeSelectors []metav1.LabelSelector `json:"nodeSelectors,omitempty"`

	// ServiceSelectors limit the Services announced.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`

	// Interfaces on which to answer ARP and NDP. Empty: the interfaces that
	// hold an address in a subnet containing the VIP, else the interface of
	// the default route.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:Pattern=`^[^\s/:]+$`
	// +listType=set
	// +optional
	Interfaces []string `json:"interfaces,omitempty"`
}

// L2AdvertisementList is a list of L2Advertisement.
//
// +kubebuilder:object:root=true
type L2AdvertisementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []L2Advertisement `json:"items"`
}
