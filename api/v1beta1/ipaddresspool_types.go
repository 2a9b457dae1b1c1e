package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPAddressPool is a set of addresses Herald may give to LoadBalancer
// Services.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=hpool,categories=herald
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.spec.addresses`
// +kubebuilder:printcolumn:name="Auto Assign",type=boolean,JSONPath=`.spec.autoAssign`
// +kubebuilder:printcolumn:name="Avoid Buggy IPs",type=boolean,JSONPath=`.spec.avoidBuggyIPs`,priority=1
// +kubebuilder:printcolumn:name="IPv4 Assigned",type=integer,JSONPath=`.status.assignedIPv4`
// +kubebuilder:printcolumn:name="IPv4 Available",type=integer,JSONPath=`.status.availableIPv4`
// +kubebuilder:printcolumn:name="IPv6 Assigned",type=integer,JSONPath=`.status.assignedIPv6`
// +kubebuilder:printcolumn:name="IPv6 Available",type=integer,JSONPath=`.status.availableIPv6`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IPAddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec IPAddressPoolSpec `json:"spec"`
	// +optional
	Status IPAddressPoolStatus `json:"status,omitempty"`
}

// IPAddressPoolSpec says which addresses a pool holds and which Services
// may take them.
type IPAddressPoolSpec struct {
	// Addresses are CIDRs (198.51.100.64/27, 2001:db8:ff::/120) and ranges
	// written first-last (198.51.100.70-198.51.100.80), IPv4 and IPv6 mixed.
	// The API server checks the syntax, the family of both ends and, for
	// IPv4, their order; the order of IPv6 range ends is checked by the
	// controller and reported in the Valid condition (CEL's cost budget
	// cannot afford comparing IPv6 addresses).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=90
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self) || (self.split('-').size() == 2 && isIP(self.split('-')[0]) && isIP(self.split('-')[1]))",message="spec.addresses: each entry must be a CIDR such as 198.51.100.0/27 or a range first-last such as 198.51.100.10-198.51.100.20"
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="spec.addresses: a CIDR must not have host bits set (write the network address, e.g. 198.51.100.64/27)"
	// +kubebuilder:validation:items:XValidation:rule="!(self.split('-').size() == 2 && isIP(self.split('-')[0]) && isIP(self.split('-')[1])) || ip(self.split('-')[0]).family() == ip(self.split('-')[1]).family()",message="spec.addresses: both ends of a range must be of one IP family"
	// +kubebuilder:validation:items:XValidation:rule="!(self.split('-').size() == 2 && isIP(self.split('-')[0]) && isIP(self.split('-')[1])) || ip(self.split('-')[0]).family() != 4 || ip(self.split('-')[1]).family() != 4 || (int(self.split('-')[0].split('.')[0]) * 16777216 + int(self.split('-')[0].split('.')[1]) * 65536 + int(self.split('-')[0].split('.')[2]) * 256 + int(self.split('-')[0].split('.')[3])) <= (int(self.split('-')[1].split('.')[0]) * 16777216 + int(self.split('-')[1].split('.')[1]) * 65536 + int(self.split('-')[1].split('.')[2]) * 256 + int(self.split('-')[1].split('.')[3]))",message="spec.addresses: the first address of a range must not be above the last"
	// +listType=atomic
	Addresses []string `json:"addresses"`

	// AutoAssign lets Herald give addresses of this pool to any Service.
	// When false, the pool is used only by Services that name it in the
	// herald.dev/address-pool annotation or request one of its addresses.
	// +kubebuilder:default=true
	// +optional
	AutoAssign *bool `json:"autoAssign,omitempty"`

	// AvoidBuggyIPs skips IPv4 addresses ending in .0 and .255, which some
	// old clients and middleboxes drop.
	// +optional
	AvoidBuggyIPs bool `json:"avoidBuggyIPs,omitempty"`

	// ServiceAllocation limits which Services may take addresses of this
	// pool and orders the pools: with no allocation rules, any Service may.
	// +optional
	ServiceAllocation *ServiceAllocation `json:"serviceAllocation,omitempty"`

	// Sharing says who may share this pool's addresses. Without it, a
	// sharing key (herald.dev/allow-shared-ip) joins Services of one
	// namespace only.
	// +optional
	Sharing *PoolSharing `json:"sharing,omitempty"`
}

// PoolSharing says which namespaces may share a pool's addresses with
// each other, and how a shared address of Services with
// externalTrafficPolicy: Local is announced.
type PoolSharing struct {
	// AcrossNamespaces lists the namespaces whose Services may share an
	// address of this pool with Services of the other namespaces listed,
	// when their sharing keys match; ["*"] lets every namespace. Removing
	// a namespace stops new joins; Services already sharing keep their
	// address.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self == '*' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.sharing.acrossNamespaces: each entry must be a namespace name or \"*\" (every namespace)"
	// +kubebuilder:validation:XValidation:rule="!self.exists(n, n == '*') || self.size() == 1",message="spec.sharing.acrossNamespaces: \"*\" (every namespace) must be the only entry"
	// +listType=set
	// +optional
	AcrossNamespaces []string `json:"acrossNamespaces,omitempty"`

	// LocalFallback says which nodes announce an address that Services
	// with externalTrafficPolicy: Local and different pods share, while
	// no node has a ready local endpoint of every one of them:
	// SomePorts (the default) announces it from the nodes with local
	// endpoints of some of them, so that the Services with pods keep
	// working and the others' ports are dropped there; None announces it
	// from no node until some node serves every port. Either way the
	// Services' herald.dev/Announced condition names the Services that
	// lack local endpoints and where.
	// +kubebuilder:validation:Enum=SomePorts;None
	// +optional
	LocalFallback string `json:"localFallback,omitempty"`
}

// ServiceAllocation restricts a pool to some Services and ranks it.
type ServiceAllocation struct {
	// Priority orders pools when several could serve a Service: the lowest
	// number is tried first; pools with equal priority are tried by name.
	// Pools without a priority come after all pools with one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Namespaces lists the namespaces whose Services may use the pool.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelectors select, by label, the namespaces whose Services may
	// use the pool.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`

	// ServiceSelectors select, by label, the Services that may use the pool.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ServiceSelectors []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// IPAddressPoolStatus is written by the controller.
type IPAddressPoolStatus struct {
	// AssignedIPv4 counts the pool's IPv4 addresses held by Services.
	// +optional
	AssignedIPv4 int64 `json:"assignedIPv4"`
	// AvailableIPv4 counts the pool's IPv4 addresses still free.
	// +optional
	AvailableIPv4 int64 `json:"availableIPv4"`
	// AssignedIPv6 counts the pool's IPv6 addresses held by Services.
	// +optional
	AssignedIPv6 int64 `json:"assignedIPv6"`
	// AvailableIPv6 counts the pool's IPv6 addresses still free, capped at
	// 2^63-1 (a /64 holds far more).
	// +optional
	AvailableIPv6 int64 `json:"availableIPv6"`
	// OutsideRanges counts addresses Services still hold from this pool that
	// its current ranges no longer contain (the pool shrank or changed; the
	// Services keep them).
	// +optional
	OutsideRanges int64 `json:"outsideRanges,omitempty"`
	// AddressesOutsideRanges are the addresses OutsideRanges counts,
	// sorted: the controller's record of which pool such an address
	// belongs to. The speakers, the controller's restore and kubectl
	// herald status read it (never a Service's annotation, which its
	// owner can edit) to find the pool of an address no pool's ranges
	// contain. It holds only addresses the pool handed out.
	// +kubebuilder:validation:items:MaxLength=45
	// +listType=set
	// +optional
	AddressesOutsideRanges []string `json:"addressesOutsideRanges,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Valid, Conflicting, AddressesOutsideRanges.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// InForce is the last valid version of the pool, the one every process
	// keeps in force while a later edit is refused (see the Valid
	// condition). A process that starts reads it here.
	// +optional
	InForce *IPAddressPoolInForce `json:"inForce,omitempty"`
}

// IPAddressPoolList is a list of IPAddressPool.
//
// +kubebuilder:object:root=true
type IPAddressPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IPAddressPool `json:"items"`
}

// Values of PoolSharing.LocalFallback.
const (
	LocalFallbackSomePorts = "SomePorts"
	LocalFallbackNone      = "None"
)
