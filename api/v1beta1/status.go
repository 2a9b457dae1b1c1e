package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
