// Package announced is the controller's view of what the speakers
// announce, for a Service's herald.dev/Announced condition.
//
// Its job has two halves:
//   - Confirm, a pure function: from the announcing state, which
//     speakers are alive and what they report, the condition's status,
//     reason and message, and the nodes it was computed from;
//   - Tracker, the memory between syncs: which speakers were last seen
//     alive, which Services depend on which nodes (so that a speaker
//     going up or down requeues exactly those), and what each Service's
//     condition said when it was last True (so that a change of owner
//     through Unknown still reads as a change of the announcing nodes).
//
// Reading the informers (Leases, SpeakerStatuses) and writing the status
// stay in internal/controller.
package announced
