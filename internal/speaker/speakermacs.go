package speaker

import (
	"bytes"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/herald-lb/herald/internal/members"
)

// The L2 fence yields only to another speaker's node (see internal/layer2's
// speakers.go). Each speaker publishes the link-layer addresses of its
// node with its member-list metadata (members.Config.NodeData, encoded by
// EncodeLinkAddrs): only holders of the member-list key can publish, and
// a node's addresses arrive with the node itself, before any other
// speaker hands it an address. Every reconcile hands the L2 backend the
// addresses the other nodes published, and whether they cover every other
// node that may run a speaker (speakerLinks).

// SpeakerMACs is the part of an L2 backend (*layer2.Announcer) that is
// told the MACs of the other speakers' nodes; the speaker uses it when its
// L2 backend has it.
type SpeakerMACs interface {
	SetSpeakerMACs(macs []net.HardwareAddr, complete bool)
}

// NodeData is the part of a member list (*members.Members) that returns
// what each member published (members.Config.NodeData).
type NodeData interface {
	NodeData(node string) []byte
}

// macLen is the length of an Ethernet address, the unit of the encoding.
const macLen = 6

// maxLinkAddrs is how many addresses fit a member's published data.
const maxLinkAddrs = members.MaxNodeData / macLen

// LinkAddrs returns the link-layer addresses of this node that a speaker
// announces from by default: those of the interfaces that are up, not
// loopback, with an Ethernet address and not matching the exclude
// patterns (--l2-exclude-interfaces), deduplicated (bond members share
// theirs) and sorted, at most maxLinkAddrs. The excluded ones are left
// out: a busy node has one veth per pod, and every member carries every
// other's addresses in each state exchange.
func LinkAddrs(ifaces []net.Interface, exclude []string) []net.HardwareAddr {
	var out []net.HardwareAddr
	for _, ifc := range ifaces {
		mac := ifc.HardwareAddr
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || len(mac) != macLen || mac[0]&1 != 0 || bytes.Equal(mac, make([]byte, macLen)) {
			continue
		}
		if !matchesAny(ifc.Name, exclude) {
			out = append(out, mac)
		}
	}
	out = sortedMACs(out)
	return out[:min(len(out), maxLinkAddrs)]
}

func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func sortedMACs(macs []net.HardwareAddr) []net.HardwareAddr {
	out := slices.Clone(macs)
	slices.SortFunc(out, func(a, b net.HardwareAddr) int { return bytes.Compare(a, b) })
	return slices.CompactFunc(out, func(a, b net.HardwareAddr) bool { return bytes.Equal(a, b) })
}

// EncodeLinkAddrs is the published form of addrs: the six bytes of each,
// one after the other, at most maxLinkAddrs of them.
func EncodeLinkAddrs(addrs []net.HardwareAddr) []byte {
	out := make([]byte, 0, macLen*len(addrs))
	for _, a := range addrs[:min(len(addrs), maxLinkAddrs)] {
		if len(a) == macLen {
			out = append(out, a...)
		}
	}
	return out
}

// decodeLinkAddrs parses EncodeLinkAddrs' output; trailing bytes short of
// an address are ignored.
func decodeLinkAddrs(b []byte) []net.HardwareAddr {
	out := make([]net.HardwareAddr, 0, len(b)/macLen)
	for ; len(b) >= macLen; b = b[macLen:] {
		out = append(out, slices.Clone(net.HardwareAddr(b[:macLen])))
	}
	return out
}

// speakerLinks returns the MACs the other nodes (others) published, and
// whether they cover every other node that may run a speaker: a node that
// published none counts only when it is not up in the member list and its
// speaker's Lease is neither fresh nor unread (leaseLive false), i.e. no
// speaker runs there. A member that is up and published nothing (an older
// speaker) leaves the set incomplete. unpublished lists the nodes not up
// that published nothing: their Leases must be read.
func speakerLinks(others []string, state func(string) members.State, data func(string) []byte, leaseLive func(string) bool) (macs []net.HardwareAddr, complete bool, unpublished []string) {
	complete = true
	for _, n := range others {
		if got := decodeLinkAddrs(data(n)); len(got) > 0 {
			macs = append(macs, got...)
			continue
		}
		if st := state(n); st == members.Alive || st == members.Suspect {
			complete = false
			continue
		}
		unpublished = append(unpublished, n)
		if leaseLive(n) {
			complete = false
		}
	}
	return sortedMACs(macs), complete, unpublished
}

// macsKey is a comparable form of a set handed to the L2 backend.
func macsKey(macs []net.HardwareAddr, complete bool) string {
	var b strings.Builder
	for _, m := range macs {
		b.WriteString(m.String())
		b.WriteByte(' ')
	}
	if complete {
		b.WriteString("complete")
	}
	return b.String()
}

// tellSpeakerMACs hands the L2 backend the MACs the other nodes (others)
// published and whether they are complete (see speakerLinks), when it
// changed, and returns the nodes whose Leases must be read for that.
// Without a member list that carries the nodes' data, or before it has
// settled, the set is never complete: the fence yields to any host.
func (lv *liveness) tellSpeakerMACs(ml Liveness, others []string) []string {
	l2, ok := lv.fence.(SpeakerMACs)
	if !ok {
		return nil
	}
	var macs []net.HardwareAddr
	var complete bool
	var unpublished []string
	if nd, ok := ml.(NodeData); ok {
		macs, complete, unpublished = speakerLinks(others, ml.State, nd.NodeData, func(n string) bool {
			_, read := lv.leases.lastRead(n) // not read yet: wanted from this reconcile on
			return !read || lv.leases.alive(n)
		})
		complete = complete && ml.Settled()
	}
	key := macsKey(macs, complete)
	lv.mu.Lock()
	changed := key != lv.speakerMACs
	lv.speakerMACs = key
	lv.mu.Unlock()
	if changed {
		l2.SetSpeakerMACs(macs, complete)
		if complete {
			lv.log.Info("the other speakers' link-layer addresses are known: the L2 fence yields to no other host", "macs", len(macs))
		} else {
			lv.log.Info("some speakers' link-layer addresses are not known: the L2 fence yields to any host", "macs", len(macs))
		}
	}
	return unpublished
}
