// Package members owns node liveness among Herald speakers: which nodes'
// speakers are alive, as seen by this one, over an encrypted
// hashicorp/memberlist gossip cluster (SWIM with Lifeguard).
//
// It answers State(node) with Alive, Suspect, Dead, Left or Unknown, keeps
// its own memory (a node seen Dead or Left stays so after memberlist forgets
// it, until it is seen Alive again or its Node object is gone: Retain),
// sends that memory of the dead and left in its push-pull state and takes
// the others' for nodes it never saw (reports.go: memberlist drops news of
// unknown nodes, so a member that joined after a death would never learn
// of it), tells the speaker through OnChange when
// anything changed, says when the first join has settled (the other members
// have acted on this node's arrival, within a bound however many member
// addresses hang: welcome.go), and on SIGTERM
// leaves gracefully so that the others see it gone before it goes quiet.
//
// It reads its key (keysource.go) from the file mounted from the key's
// Secret and, while the kubelet has not filled that volume yet (right after
// an install, up to a minute), from the same Secret in the speaker's synced
// cache; KeySource.Read says whether a missing key resolves by itself
// (ErrNoKeyYet) or needs an operator (daemon.Permanent).
//
// It never decides who announces what (internal/announce does, from these
// states), reads no other Kubernetes object (the speaker passes node
// addresses to Join and node names to Retain) and writes none, and never
// runs unencrypted.
//
// # Failure detection and its trade-off
//
// Every ProbeInterval each member probes one other member, in a shuffled
// round-robin order. A probe that gets no ack within ProbeTimeout is
// retried indirectly through up to 3 other members and over TCP; only when
// all of that fails before the end of the interval is the node suspected.
// A suspect that is alive refutes as soon as the suspicion reaches it; one
// that does not is declared dead after
//
//	SuspicionMult × max(1, log10(members)) × ProbeInterval
//
// and the news is gossiped every GossipInterval. So, for a node that dies:
//
//	detection ≈ wait for the next probe of it   (0 … ~2 × ProbeInterval on 3 nodes,
//	                                             shorter with more probers)
//	          + ProbeInterval                   (direct, indirect and TCP probe)
//	          + suspicion timeout               (2 × ProbeInterval with DefaultTiming)
//	          + one GossipInterval              (the others learn it)
//
// DefaultTiming (80 ms probes, 40 ms probe timeout, SuspicionMult 2, so a
// 160 ms suspicion, and 30 ms gossip) gives 240–480 ms by that arithmetic.
// Measured with BenchmarkDetect (20 crashes of one member of a fresh 3-node
// cluster on loopback, time until both survivors see it Dead), four runs:
// p50 277–312 ms, p99 (the slowest of 20) 366–475 ms. With real processes
// in network namespaces on a bridge (BenchmarkDetectBetweenNamespaces, root):
// SIGKILL p50 287 ms, p99 416 ms; link down p50 278 ms, p99 361 ms.
// LargeClusterTiming on 3 nodes in one process: p50 1.09 s, p99 1.47 s;
// FastLargeClusterTiming: p50 0.46 s, p99 0.67 s.
//
// Faster detection costs:
//
//   - traffic: each member sends one probe (and receives about one) per
//     ProbeInterval, about 12 small encrypted UDP packets a second per node
//     with DefaultTiming, independent of cluster size; gossip is sent only
//     when there is news;
//   - false suspicions: a member that cannot run for longer than about
//     ProbeInterval is suspected, and one that cannot refute within the
//     suspicion timeout is declared dead and loses its addresses until its
//     refutation arrives (a flap of tens of ms, not an outage). Lifeguard's
//     awareness stays on: a member that notices its own probes failing
//     (missing nacks) slows its probing down up to 8×, so an overloaded
//     prober does not accuse healthy nodes. Indirect probes and the TCP
//     fallback stay on, so one lost packet never makes a node even suspect.
//
// Measured with BenchmarkFalseSuspicion (a healthy 3-node cluster, 10 s of
// every CPU saturated): with the load in other processes (other pods; the
// kernel shares the CPU) DefaultTiming saw 0–1 suspicions and no deaths;
// with the load inside the same process (the Go scheduler shares the CPU,
// which is what a speaker throttled by a CPU limit experiences) it saw
// about 35 suspicions and 11 false deaths, LargeClusterTiming none. So run
// the speaker with a CPU request and no CPU limit (CFS throttling freezes
// a process for the rest of its 100 ms period), or use LargeClusterTiming
// where that cannot be guaranteed.
//
// The suspicion timeout grows with log10 of the member count (memberlist
// does this), so a 100-node cluster waits twice as long as a 10-node one.
// With SuspicionMult 2 or less memberlist waits for no confirmations; with
// more (LargeClusterTiming: 4), Lifeguard starts the timer at
// SuspicionMaxTimeoutMult times the timeout and shortens it as other members
// confirm the suspicion, which trades speed for fewer false deaths when
// there are many members, each one a possible slow prober. For clusters
// of tens to hundreds of nodes, or nodes that are often CPU-starved, start
// from LargeClusterTiming; to tune, raise ProbeInterval (and ProbeTimeout
// with it) before SuspicionMult. FastLargeClusterTiming trades that margin
// back for detection near 1 s at 200 members, for speakers whose CPU
// request is honoured (docs/operations.md has the simulation's figures).
//
// # What the states mean here
//
// memberlist reports join, leave (dead and left alike) and metadata updates,
// but not suspicion. Suspect therefore means "this speaker's own probe of
// the node failed and the cluster has not declared it dead yet"; it clears
// when a later probe of this speaker is answered. A graceful leave is told
// apart from a failure by a leaving flag in the node's metadata, gossiped
// before memberlist's own leave message.
package members
