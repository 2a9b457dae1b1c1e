// Package v1beta1 holds Herald's configuration API, group herald.dev:
// IPAddressPool, L2Advertisement, BGPPeer, BGPAdvertisement, Community and
// BFDProfile, all cluster-scoped; SpeakerStatus, one per node, written by
// the speakers (what each node announces); plus the names of the annotations,
// conditions and finalizer Herald reads and writes on other objects.
//
// Everything one object can check is a schema rule (OpenAPI types, enums,
// ranges, CEL x-kubernetes-validations) so the API server refuses a bad
// object with a message naming the field. Rules spanning objects live in
// internal/config.
//
// +k8s:deepcopy-gen=package
// +groupName=herald.dev
package v1beta1
