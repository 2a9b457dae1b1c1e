// Package controller is Herald's service controller: it gives LoadBalancer
// Services their addresses from IPAddressPools, the way the cloud
// service controller gives them a cloud load balancer.
//
// It follows Kubernetes' sample-controller pattern: shared informers and
// listers, typed rate-limited work queues, one sync function per queue that
// reads from listers, decides, and writes only differences with the field
// manager "herald-controller". A Service's status is an update of its
// status subresource (statusupdate.go): the status as the decision read
// it, with only Herald's ingress and conditions changed, conditional on
// the resourceVersion read, so other controllers' conditions stay and a
// write from a stale view fails with a conflict. The pool annotation and
// the status of Herald's own objects are written with server-side apply.
//
// The queues:
//   - services: one key per Service; assign or release addresses and
//     publish status.loadBalancer.ingress (ipMode VIP), the
//     herald.dev/ip-allocated-from-pool annotation, the herald.dev/Allocated
//     and herald.dev/Announced conditions and events;
//   - config: a single key; rebuild the configuration snapshot
//     (internal/config) when a Herald object or Secret changes, report its
//     problems on the objects, and requeue everything that could change;
//   - pools: one key per IPAddressPool; usage counts, conditions and the
//     herald.dev/pool-protection finalizer;
//   - speaker-leases: one key per node; notices a speaker's liveness Lease
//     expiring or coming back, and requeues the Services whose condition
//     depends on that node.
//
// herald.dev/Announced says what the speakers report in their
// SpeakerStatus objects (speakers.go; the decision and its memory are
// internal/controller/announced): True naming the nodes
// that confirm, NotConfirmed, or OwnerSpeakerDown.
//
// Addresses are never lost: at start, before any new allocation, every
// assignment found in Service status is restored (oldest Service first);
// configuration changes never take an address from a running Service.
package controller
