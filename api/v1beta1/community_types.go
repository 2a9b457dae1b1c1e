package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Community defines named aliases for BGP community values, usable in
// BGPAdvertisement.spec.communities.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hcomm,categories=herald
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Community struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CommunitySpec `json:"spec"`
}

// CommunitySpec lists the aliases.
type CommunitySpec struct {
	// Communities are the aliases, each a name and a value.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	Communities []CommunityAlias `json:"communities"`
}

// CommunityAlias names one community value.
type CommunityAlias struct {
	// Name of the alias, used in BGPAdvertisement.spec.communities: lower
	// case letters, digits and dashes, starting with a letter.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Value: a standard community a:b or a large community large:a:b:c.
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{1,5}:[0-9]{1,5}$') ? self.split(':').all(p, int(p) <= 65535) : (self.matches('^large:[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$') && self.split(':').all(p, p == 'large' || int(p) <= 4294967295))",message="spec.communities[].value must be a standard community a:b (each part 0-65535) or a large community large:a:b:c (each part 0-4294967295)"
	Value string `json:"value"`
}

// CommunityList is a list of Community.
//
// +kubebuilder:object:root=true
type CommunityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Community `json:"items"`
}
