// Package l2owner is the one home of the L2 hand-over: for one address on
// one interface, whether this node answers ARP / NDP for it, and what it
// tells the segment, while the address changes owner. It is pure and
// deterministic: no sockets, no clocks, no goroutines. internal/layer2
// keeps the sockets, timers and clocks and feeds a Machine inline on its
// read path (the fast path, answering a request, stays a few atomic
// loads); internal/speaker decides which addresses this node owns;
// internal/members says who is alive and carries the welcomes.
//
// # The map
//
// Phases (Machine.Phase): Idle (not announced here), Owner (answered and
// advertised), Releasing (handed over: answered, not advertised, until
// the new owner shows itself), Yielded (taken over: silent), Fenced (owned,
// but another speaker that outranks this one announces it too: silent),
// Asking (back from a pause: silent, asking who answers), Deferred (back
// from a pause, another speaker answers: silent).
//
// Events (Kind): the decision (Claim, Release, Drop); this process was
// not scheduled (Pause); frames from another host (Announced to everyone,
// Heard in answer to a question, Asked who answers, Notified to this
// node alone by a fence's loser, GaveUp to this node alone by a fence's
// winner), each saying whether that host is another speaker's node; the
// member list healed (Healed); a wake asked for (Tick).
//
// Actions (Do): answer off, on (from the next announcement: the host
// that answered until then answers the requests received before it), or
// now; announce (a burst), announce once, reassert (against a foreign
// claim); ask who answers; wake; defer, fence, lift; yield; tell the
// winner, tell the loser; report a conflict, a foreign claim, a claim
// still settling.
//
// Timing (timing.go): AskFor, Refresh, FenceSettle, FenceVerify,
// ContestedMemory, ReleaseAsks, ReleaseGrace, WelcomeTimeout,
// GratuitousCount and GratuitousInterval, HeartbeatsPerPause, each with
// why its value.
//
// # The rules
//
// Make-before-break (release.go): a node losing an address answers it
// until the new owner shows itself (its announcement, or its answer to
// the question the releasing node asks at each of ReleaseAsks: a new
// owner declared dead by mistake answered all along and never
// announces), then stops at once; the new owner answers from its first
// announcement on. A new owner heard announcing before the old one's
// release (within ContestedMemory) is yielded to at once. How long a
// release lasts across the speaker's reconciles is ReleaseEnds: until the
// new owner took over, the address has no new owner, or ReleaseGrace.
//
// The fence (fence.go): two owners of one address (a split brain) hear
// each other's refreshes; Wins ranks their MACs per address, both sides
// compute the same, and the loser (once its claim is FenceSettle old)
// falls silent for 2 × Refresh after it last heard the winner, verifying
// every FenceVerify that the winner still answers. The winner tells a
// loser when it gives the address up (TellLoser), the loser tells a
// winner that may not have heard it (TellWinner), a healed member list
// lifts every fence. Only another speaker's node can win: any other host
// announcing an owned address is a foreign claim, reported, answered with
// a burst, never yielded to.
//
// A pause (pause.go): a process that was not scheduled for longer than
// the member list's quickest detection (Config.PauseAfter) answers
// nothing until it has learned who answers now: it asks, defers to a
// speaker that answers until that speaker gives the address up, or
// claims it again when nobody answered within AskFor. A shorter gap (a
// CPU-starved process) changes nothing.
//
// # Scenarios
//
// testdata/*.txt are scripts of events and the actions expected, one a
// scenario (format: scenario_test.go), read by TestScenarios:
// graceful-handover, abrupt-failover, partition-fence, crash-loop,
// restarted-owner, restarted-nonowner, held-back, rolling-update, drain,
// kubelet-stopped, malformed-arp, metallb-hold, cpu-starved-owner, and
// the faults: paused-owner (with paused-again, paused-releasing,
// paused-foreign-host), hung-members, stale-lease, lan-host-attack,
// two-interfaces. claim-release is the decision alone. The end-to-end
// tests named in each file are the proof on the wire.
package l2owner
