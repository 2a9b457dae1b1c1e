// Package l2owner decides, for one address on one interface, whether this
// node answers ARP / NDP for it, and what it tells the segment: the L2
// ownership machine. It is pure and deterministic: no sockets, no clocks,
// no goroutines. Its inputs are events with their times (the decision
// lists the address as owned or released here, this process was not
// scheduled for a while, another host answered or announced the address,
// another host asked who answers it, a time the machine asked to be woken
// at has come); its outputs are actions (answer on or off, announce with a
// gratuitous ARP / unsolicited NA, ask who answers, defer to or yield to
// another host, wake me at). internal/layer2 keeps the sockets and timers
// and feeds a Machine inline on its read path, so the fast path stays a
// few atomic loads.
//
// # A paused process
//
// A process that was not scheduled for longer than the member list needs
// to declare a silent member dead (Config.PauseAfter: a VM pause, a live
// migration, every process of the node stopped) may come back to find
// that another node took its addresses over in the meantime. Its own view
// has not changed: it never saw anything happen. If it simply went on
// answering, the old and the new owner would answer side by side until
// the member list and the fence sorted it out, flipping the address back
// and forth (seen in the lab: about 170 ms, owners changing up to three
// times). So on a pause the machine stops answering and advertising at
// once (Asking), asks who answers the address, and waits AskFor:
//
//   - another speaker answers or announces it: that node answers now, and
//     this one stays silent (Deferred) until that node gives the address
//     up, which it shows by asking who answers it (a node handing an
//     address over asks, see layer2's releaseask.go) or by no longer
//     answering; then this node claims it, make-before-break: it announces
//     first and answers requests received from its announcement on, and
//     the other stops when it reads that announcement. One change of
//     owner, no request answered by both;
//   - nobody answers within AskFor: nobody took over (the process was
//     starved, not dead for the others), and it claims the address again
//     the same way.
//
// A host that is not another speaker's node never makes it defer: only a
// speaker can have taken an address over.
//
// A gap no longer than PauseAfter changes nothing: a CPU-starved process
// that keeps running cannot have been declared dead, so it keeps
// answering (no false failover under load).
//
// # Scope
//
// The machine covers the pause rule today; the fence, the give-up, the
// release ask and the hand-over of internal/layer2 are to move into it,
// as further events and phases, with their scenarios under testdata/.
// Every scenario file there is a script of events in and the actions
// expected out (see scenario_test.go for the format).
package l2owner
