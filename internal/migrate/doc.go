// Package migrate turns a MetalLB configuration into Herald's: it decodes
// MetalLB's objects (metallb.io v1beta1 and v1beta2: IPAddressPool,
// L2Advertisement, BGPPeer, BGPAdvertisement, Community, BFDProfile) into
// its own small structs, converts them into herald.dev/v1beta1 objects,
// and reports every field whose meaning changed on the way and every
// field or object it could not carry over, with the reason. It also
// writes the ordered takeover plan for a cluster (plan.go) from an
// inventory of what MetalLB runs there.
//
// Files: metallb.go (MetalLB's fields, as far as Herald needs them),
// decode.go (YAML documents and Lists in, objects by kind out), names.go
// (cluster-scoped names that cannot collide), convert*.go (one file per
// kind family), report.go (what changed, what was dropped, which Secrets
// to copy), output.go (Herald objects as YAML), plan.go.
//
// It never talks to a cluster: internal/migratecmd reads MetalLB's objects
// and inventory from one and hands them here. So this package imports no
// client-go, and its fuzzer's instrumented build stays small. The MetalLB
// module is not a dependency either: its API package pulls in
// controller-runtime and FRR-K8s; the few fields read here are declared
// here, checked against MetalLB v0.14-v0.16's API types.
package migrate
