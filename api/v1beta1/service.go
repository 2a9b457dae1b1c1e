package v1beta1

// The names Herald uses on objects it does not own: Services and its own
// pools. They are part of Herald's public API.
const (
	// LoadBalancerClass is Herald's spec.loadBalancerClass. Services with no
	// class are Herald's too, unless the controller runs with --lb-class-only.
	LoadBalancerClass = "herald.dev/herald"

	// AnnotationLoadBalancerIPs requests specific addresses, comma-separated,
	// one per IP family (or AnnotationAddressCount of each family listed).
	// spec.loadBalancerIP is honoured as well; setting both is an error.
	AnnotationLoadBalancerIPs = "herald.dev/loadBalancerIPs"
	// AnnotationAddressPool picks the IPAddressPool to allocate from, by name.
	AnnotationAddressPool = "herald.dev/address-pool"
	// AnnotationAllowSharedIP is the sharing key: Services with the same key
	// may share an address when their ports do not collide.
	AnnotationAllowSharedIP = "herald.dev/allow-shared-ip"
	// AnnotationAddressCount asks for several addresses per IP family
	// ("1" to "16"; absent means one), allocated together from one pool
	// and all published in status.loadBalancer.ingress. It is a request:
	// what a Service holds is its status.
	AnnotationAddressCount = "herald.dev/address-count"
	// AnnotationAllocatedFromPool is written by Herald: the pool the
	// Service's addresses came from.
	AnnotationAllocatedFromPool = "herald.dev/ip-allocated-from-pool"

	// ConditionAllocated is the Service condition saying whether Herald gave
	// the Service its addresses.
	ConditionAllocated = "herald.dev/Allocated"
	// ConditionAnnounced is the Service condition saying whether some node is
	// eligible to announce the Service's addresses.
	ConditionAnnounced = "herald.dev/Announced"

	// PoolProtectionFinalizer holds a deleted IPAddressPool until no Service
	// uses its addresses any more.
	PoolProtectionFinalizer = "herald.dev/pool-protection"
)

// Condition types of Herald's own objects.
const (
	// ConditionValid says whether an object is usable: False names the
	// field and the problem (a missing pool, Secret, BFD profile, ...).
	ConditionValid = "Valid"
	// ConditionConflicting on an IPAddressPool is True when its addresses
	// overlap an older pool's; the newer pool is left out of the
	// configuration.
	ConditionConflicting = "Conflicting"
	// ConditionAddressesOutsideRanges on an IPAddressPool is True when
	// Services hold addresses the pool gave them but no longer contains.
	ConditionAddressesOutsideRanges = "AddressesOutsideRanges"
	// ConditionSessionsConfigured on a BGPPeer is False when some node's
	// speaker refused to configure its session (the node lacks the
	// peer's VRF, a router ID conflict, ...): the message names each node
	// and why, from the nodes' SpeakerStatuses.
	ConditionSessionsConfigured = "SessionsConfigured"
)

// LabelInstallation names the Herald installation an object belongs to
// when several share a cluster (--installation): the configuration
// objects an installation reads (pools, advertisements, peers,
// Communities, BFD profiles) and the SpeakerStatuses its speakers write.
// Objects without it belong to the default installation.
const LabelInstallation = "herald.dev/installation"
