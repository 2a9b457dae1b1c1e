// Package vrf reads the node's Linux VRF devices and chooses, for a BGP
// session bound to one, the node's addresses in it: the next hops of the
// routes sent on that session. Choosing is pure (Table.NextHops over a
// snapshot of the links); Watcher keeps the snapshot current.
package vrf
