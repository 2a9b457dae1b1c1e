// Package draincmd is "kubectl herald drain": it labels a node
// herald.dev/drain, so that Herald stops announcing from it (L2 hands its
// addresses over make-before-break, BGP withdraws after the
// graceful-shutdown wait), and waits until the node's speakers report
// that they announce nothing, printing where each address went. Undo
// removes the label. It never cordons or evicts: that is kubectl drain's
// job, run after it.
package draincmd
