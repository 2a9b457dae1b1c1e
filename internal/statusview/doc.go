// Package statusview answers "who announces what" for kubectl herald
// status: from Herald's Service conditions (herald.dev/Allocated,
// herald.dev/Announced), the speakers' events (NodeAssigned,
// BGPAdvertised) and, when the cluster has them, the speakers' per-node
// status objects (speakerstatuses.herald.dev, read without a schema: any
// IP address under an object's status counts as announced by its node,
// labelled by the status field it sits under). Build is pure; fetch.go
// reads the inputs from a cluster.
package statusview
