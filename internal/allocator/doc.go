// Package allocator is the controller's address book: which Service holds
// which load-balancer address, from which pool. It owns pool choice
// (admission, priority, families), address choice inside a pool, requested
// addresses, sharing keys, dual-stack, and the per-pool counts shown in
// IPAddressPool status.
//
// It never talks to Kubernetes, never touches the network, never logs and
// never reads a clock: it is pure code on net/netip values, driven by the
// controller (SetPools, Restore at start, Assign and Release on each
// Service change), and its answers depend only on the calls made, never on
// map order.
//
// Guarantees:
//   - A Service holds AddressCount addresses (herald.dev/address-count,
//     one when absent) of each family it gets, all from one pool, in its
//     family order and ascending within a family; they are allocated
//     together: all of them or none.
//   - No address is held by two Services unless both carry the same
//     sharing key, ask for the same address count, their protocol/port
//     pairs are disjoint and both or neither use externalTrafficPolicy
//     Local (whatever their selectors). Services sharing an address hold
//     the same addresses of its family: a Service joins all of another's
//     addresses of a family, never some.
//   - A Service joins an address held in another namespace only when the
//     pool lets both namespaces share (Pool.ShareAcrossNamespaces), and
//     what it is told when refused names no Service of another namespace.
//     Consent withdrawn stops new joins and moves nobody.
//   - The first holder of a shared address never moves for a later one:
//     when its change (of ports, or traffic policy) makes a later holder
//     clash with it, it keeps the address and Assign names the later
//     ones (Displaced); each moves on its next Assign.
//   - Nothing but a change of a Service's own request moves its address:
//     Assign is idempotent, and changing, shrinking, closing or deleting a
//     pool never drops or moves an assignment (the address counts as
//     outside the pool's ranges and is handed to nobody else).
//   - A changed request keeps each address it still allows, in a pool that
//     may still serve it (autoAssign, admission, family): a family added
//     keeps the other family's address (the new one comes from the same
//     pool), a family dropped keeps the rest, a sharing key added keeps an
//     address the Service holds alone, a larger address count keeps the
//     addresses and adds the lowest free ones, a smaller one keeps the
//     lowest of each family. A Service sharing its addresses that changes
//     its count leaves them (the others keep them).
//   - Restore takes whatever a Service's status holds (up to
//     service.MaxAddressCount per family), whatever its count asks now,
//     unless it shares only part of another Service's addresses of a
//     family (the rule above holds after a restart too).
//   - A failed Assign or Restore changes nothing.
//   - A quarantined address (Quarantine: given up moments ago) is handed
//     to nobody until Unquarantine; the controller decides how long.
//
// Files, one store per concern: pool.go and pools.go (the configured pools,
// ordered), choose.go (which pools may serve a request), book.go (address
// to holders, sharing-key index), runs.go and taken.go (the set of held
// addresses), sharing.go (may two Services share), assign.go and
// requested.go (choosing addresses), reshape.go (keeping part of an
// assignment when the request changes), quarantine.go (addresses held
// back after release), restore.go, usage.go (counts),
// allocator.go (the public API), errors.go (typed failures), request.go
// (Assignment; the Request it answers is service.Request, read from the
// Service by internal/service, which never imports this package so that
// the speaker does not link the allocator).
//
// Data structure. Held addresses are kept in a map (address to holders)
// and, for choosing, as a B-tree (github.com/google/btree) of maximal runs
// of consecutive held addresses. The lowest free address of a range is
// then the end of the run containing the range's start, plus one: two tree
// look-ups, O(log r) for r runs (r <= held addresses), whatever the size
// of the range, so a /64 pool is never enumerated. Assign, Release and
// Restore insert or delete one address in the map and split or join at
// most two runs. Pools with avoidBuggyIPs use a second IPv4 run tree in
// which unheld .0 and .255 addresses between runs are bridged, so that
// their runs do not break every 256 addresses. A bitmap would need memory
// in proportion to the pool (impossible for IPv6); a sorted set of single
// addresses would make "lowest free" walk every held address of a dense
// pool. Counts per pool and family are kept up to date on each change
// (recomputed only on SetPools), so Usage is O(1) and exact, with IPv6
// sizes computed as big integers and saturated to uint64.
package allocator
