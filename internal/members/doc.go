// Package members owns node liveness among Herald speakers: which nodes'
// speakers are alive, as seen by this one, over an encrypted
// hashicorp/memberlist gossip cluster (SWIM with Lifeguard).
//
// It answers State(node) with Alive, Suspect, Dead, Left or Unknown, keeps
// its own memory (a node seen Dead or Left stays so after memberlist forgets
// it, until it is seen Alive again), tells the speaker through OnChange when
// anything changed, says when the first join has settled, and on SIGTERM
// leaves gracefully so that the others hand over before this node goes quiet.
//
// It never decides who announces what (internal/announce does, from these
// states), never reads Kubernetes objects (the speaker passes node addresses
// to Join and the key to Config), and never runs unencrypted.
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
// DefaultTiming (100 ms probes, SuspicionMult 2, 30 ms gossip) gives about
// 0.3–0.6 s on 3–10 nodes. Faster detection costs:
//
//   - traffic: each member sends one probe (and receives about one) per
//     ProbeInterval, about 10 small encrypted UDP packets a second per node
//     with DefaultTiming, independent of cluster size; gossip is sent only
//     when there is news;
//   - false suspicions: a member that is busy (CPU starvation, GC, a
//     saturated link) for longer than ProbeInterval is suspected, and one
//     busy for longer than the suspicion timeout is declared dead and loses
//     its addresses until it rejoins (it refutes at once, so that is a
//     flap of a few hundred ms, not an outage). Lifeguard's awareness stays
//     on: a member that notices its own probes failing (missing nacks)
//     slows its probing down up to 8×, so an overloaded prober does not
//     accuse healthy nodes. Indirect probes and the TCP fallback stay on,
//     so one lost packet never makes a node even suspect.
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
// with it) before SuspicionMult.
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
