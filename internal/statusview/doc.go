// Package statusview answers "who announces what" for kubectl herald
// status: from Herald's Service conditions (herald.dev/Allocated,
// herald.dev/Announced), the speakers' events (NodeAssigned,
// BGPAdvertised) and, when the cluster has them, the speakers' per-node
// SpeakerStatuses (speakerstatuses.herald.dev: the addresses each node
// answers for in L2 mode and the host prefixes it sends on established
// BGP sessions), which win over the events. Build is pure; fetch.go reads
// the inputs from a cluster.
package statusview
