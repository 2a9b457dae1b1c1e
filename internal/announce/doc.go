// Package announce decides who announces what: which nodes are eligible
// to announce a Service's addresses, which single node answers ARP/NDP for
// each address in L2 mode (rendezvous hashing over the live eligible
// nodes, so every speaker computes the same owner without talking, and a
// change of one node moves only the addresses that node held; a
// Service's several addresses of a family are spread over different
// nodes by Spread, with the same guarantee), and which
// routes with which attributes each node advertises to which BGP peers.
//
// It is pure: a function of the configuration snapshot, the Nodes, the
// Services (with their endpoints) and member liveness. No client, no
// socket, no clock. The speaker applies its result; the controller uses it
// for the herald.dev/Announced condition. L2Memo and BGPMemo keep the last
// decisions between calls and decide again only what changed; their
// results equal L2's and BGP's.
package announce
