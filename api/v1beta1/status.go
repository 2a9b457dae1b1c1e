package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConfigStatus is the status of a configuration object whose validity
// depends on other objects (a pool, a Secret, a BFD profile it names).
// The controller writes it.
type ConfigStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Valid (False names the field and what is missing).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InForceVersion identifies the version of an object a record of what is in
// force describes.
type InForceVersion struct {
	// Generation is the object's metadata.generation in that version.
	Generation int64 `json:"generation"`
	// UID is the object's metadata.uid: a record of another object of the
	// same name (deleted and created again) is not used.
	UID types.UID `json:"uid"`
}

// L2AdvertisementStatus is written by the controller.
type L2AdvertisementStatus struct {
	ConfigStatus `json:",inline"`

	// InForce is the last valid version of the spec, the one every process
	// keeps in force while a later edit is refused (see the Valid
	// condition). A process that starts reads it here.
	// +optional
	InForce *L2AdvertisementInForce `json:"inForce,omitempty"`
}

// L2AdvertisementInForce records the L2Advertisement spec in force.
type L2AdvertisementInForce struct {
	InForceVersion `json:",inline"`
	Spec           L2AdvertisementSpec `json:"spec"`
}

// BGPAdvertisementStatus is written by the controller.
type BGPAdvertisementStatus struct {
	ConfigStatus `json:",inline"`

	// InForce is the last valid version of the spec, the one every process
	// keeps in force while a later edit is refused (see the Valid
	// condition). A process that starts reads it here.
	// +optional
	InForce *BGPAdvertisementInForce `json:"inForce,omitempty"`
}

// BGPAdvertisementInForce records the BGPAdvertisement spec in force.
type BGPAdvertisementInForce struct {
	InForceVersion `json:",inline"`
	Spec           BGPAdvertisementSpec `json:"spec"`
}

// BGPPeerStatus is written by the controller.
type BGPPeerStatus struct {
	ConfigStatus `json:",inline"`

	// InForce is the last valid version of the spec, the one every process
	// keeps in force while a later edit is refused (see the Valid
	// condition). A process that starts reads it here. It holds the spec
	// as written: the name of a password Secret, never its content.
	// +optional
	InForce *BGPPeerInForce `json:"inForce,omitempty"`
}

// BGPPeerInForce records the BGPPeer spec in force.
type BGPPeerInForce struct {
	InForceVersion `json:",inline"`
	Spec           BGPPeerSpec `json:"spec"`
}

// IPAddressPoolInForce records the IPAddressPool spec in force, with the
// labels by which advertisements selected it in that version.
type IPAddressPoolInForce struct {
	InForceVersion `json:",inline"`
	// Labels are the pool's labels in that version.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	Spec   IPAddressPoolSpec `json:"spec"`
}
