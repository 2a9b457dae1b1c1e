package members

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Node metadata carried by memberlist: a version byte and a flag byte,
// then the node's opaque data (Config.NodeData), which older members
// ignore. The leaving flag is how a graceful leave is told apart from a
// failure, which memberlist's EventDelegate reports the same way
// (NotifyLeave).
const (
	metaVersion  = 1
	flagLeaving  = 1 << 0
	metaByteSize = 2
)

func encodeMeta(leaving bool, data []byte) []byte {
	var flags byte
	if leaving {
		flags |= flagLeaving
	}
	return append([]byte{metaVersion, flags}, data...)
}

// metaData is the node data in meta, nil when there is none.
func metaData(meta []byte) []byte {
	if len(meta) <= metaByteSize || meta[0] != metaVersion {
		return nil
	}
	return bytes.Clone(meta[metaByteSize:])
}

func metaLeaving(meta []byte) bool {
	return len(meta) >= metaByteSize && meta[0] == metaVersion && meta[1]&flagLeaving != 0
}

// hooks receives memberlist's callbacks and turns them into book changes.
// memberlist calls NotifyJoin/Leave/Update while holding its own node
// lock, so nothing here may call back into memberlist.
type hooks struct {
	book    *book
	observe func(transition, bool)
	dir     *directory
	welcome *welcomer
	leaving atomic.Bool // this node announces a graceful leave
	data    []byte      // Config.NodeData
}

var (
	_ memberlist.Delegate      = (*hooks)(nil)
	_ memberlist.EventDelegate = (*hooks)(nil)
	_ memberlist.PingDelegate  = (*hooks)(nil)
)

// NodeMeta publishes this node's leaving flag and its data (without the
// data if it does not fit limit).
func (h *hooks) NodeMeta(limit int) []byte {
	if limit < metaByteSize {
		return nil
	}
	data := h.data
	if metaByteSize+len(data) > limit {
		data = nil
	}
	return encodeMeta(h.leaving.Load(), data)
}

// NotifyMsg receives the hellos and welcomes of starting members
// (welcome.go), sent as UDP packets.
func (h *hooks) NotifyMsg(b []byte) { h.welcome.receive(b) }

// GetBroadcasts and AckPayload: nothing is gossiped or piggybacked on
// acks; the other user data is the push-pull state below.
func (h *hooks) GetBroadcasts(int, int) [][]byte { return nil }
func (h *hooks) AckPayload() []byte              { return nil }

// LocalState is this process's reports (reports.go): the nodes it
// remembers Dead or Left.
func (h *hooks) LocalState(bool) []byte { return encodeReports(h.book.gone()) }

// MergeRemoteState takes another member's reports for the nodes this
// process has never seen. Malformed state (another version) is ignored.
func (h *hooks) MergeRemoteState(buf []byte, _ bool) {
	reps, err := decodeReports(buf)
	if err != nil {
		return
	}
	for _, r := range reps {
		h.observe(h.book.reported(r))
	}
}

// NotifyJoin: a node became a member, or came back after Dead or Left.
func (h *hooks) NotifyJoin(n *memberlist.Node) { h.seen(n) }

// NotifyUpdate: a member changed its metadata (here: the leaving flag).
func (h *hooks) NotifyUpdate(n *memberlist.Node) { h.seen(n) }

// NotifyPingComplete: this node's direct probe of n was answered, which
// clears a suspicion raised by an earlier probe.
func (h *hooks) NotifyPingComplete(n *memberlist.Node, _ time.Duration, _ []byte) {
	h.observe(h.book.reachable(n.Name))
}

// suspectedByProbe: this node's probe of node got no answer at all
// (see newMemberlistLogger for where this comes from).
func (h *hooks) suspectedByProbe(node string) { h.observe(h.book.suspect(node)) }

// seen: a node is a member (joined, rejoined or updated its metadata);
// with the leaving flag it is on its way out and counts as Left already.
func (h *hooks) seen(n *memberlist.Node) {
	h.dir.set(n)
	h.book.setData(n.Name, metaData(n.Meta))
	if metaLeaving(n.Meta) {
		h.observe(h.book.left(n.Name))
		return
	}
	h.observe(h.book.alive(n.Name))
}

// NotifyLeave: memberlist marked the node dead or left.
func (h *hooks) NotifyLeave(n *memberlist.Node) {
	h.dir.remove(n.Name)
	if metaLeaving(n.Meta) {
		h.observe(h.book.left(n.Name))
		return
	}
	h.observe(h.book.dead(n.Name))
}
