package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BFDProfile holds BFD timers for BGP sessions that name it. The router
// declares the node down after detectMultiplier x max(transmitInterval,
// the router's receive interval) without a packet; the node declares the
// router down after the router's multiplier x max(receiveInterval, the
// router's transmit interval) (RFC 5880).
//
// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hbfd,categories=herald
// +kubebuilder:printcolumn:name="Receive",type=integer,JSONPath=`.spec.receiveInterval`
// +kubebuilder:printcolumn:name="Transmit",type=integer,JSONPath=`.spec.transmitInterval`
// +kubebuilder:printcolumn:name="Multiplier",type=integer,JSONPath=`.spec.detectMultiplier`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BFDProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec BFDProfileSpec `json:"spec,omitempty"`
}

// BFDProfileSpec are the BFD timers.
type BFDProfileSpec struct {
	// ReceiveInterval is the minimum interval, in milliseconds, at which
	// this node can receive BFD control packets.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +kubebuilder:default=300
	// +optional
	ReceiveInterval *int32 `json:"receiveInterval,omitempty"`

	// TransmitInterval is the interval, in milliseconds, at which this node
	// sends BFD control packets.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +kubebuilder:default=300
	// +optional
	TransmitInterval *int32 `json:"transmitInterval,omitempty"`

	// DetectMultiplier is how many packets may be missed before the session
	// is declared down.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=255
	// +kubebuilder:default=3
	// +optional
	DetectMultiplier *int32 `json:"detectMultiplier,omitempty"`
}

// BFDProfileList is a list of BFDProfile.
//
// +kubebuilder:object:root=true
type BFDProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BFDProfile `json:"items"`
}
