package members

import (
	"net/netip"
	"slices"
	"sync"

	"github.com/hashicorp/memberlist"
)

// directory is this process's copy of the live members' addresses and
// leaving flags, taken in memberlist's event callbacks. The *Node values
// memberlist hands out (Members, LocalNode) are its own, which its
// goroutines rewrite when a node rejoins or changes its metadata: reading
// their fields afterwards is a data race (the race detector found it in
// the joiner, and in sending messages to them). The callbacks run with
// memberlist's node lock held, so what is copied there is consistent.
type directory struct {
	// changed is signalled when a member is added, updated or removed
	// (a starting member's greeting waits on it: welcome.go).
	changed chan struct{}

	mu      sync.Mutex
	members map[string]dirEntry
}

type dirEntry struct {
	addr    netip.AddrPort
	leaving bool
}

func newDirectory() *directory {
	return &directory{changed: make(chan struct{}, 1), members: make(map[string]dirEntry)}
}

// set records a node memberlist reports alive or updated (in a callback).
func (d *directory) set(n *memberlist.Node) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members[n.Name] = dirEntry{addr: nodeAddrPort(n), leaving: metaLeaving(n.Meta)}
	signal(d.changed)
}

// remove forgets a node memberlist reports dead or left.
func (d *directory) remove(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.members, name)
	signal(d.changed)
}

// node returns a Node to address a message to, with the member's
// address as last reported.
func (d *directory) node(name string) (*memberlist.Node, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.members[name]
	if !ok {
		return nil, false
	}
	return &memberlist.Node{Name: name, Addr: e.addr.Addr().AsSlice(), Port: e.addr.Port()}, true
}

// staying returns the live members that are not leaving, sorted, except.
func (d *directory) staying(except string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for name, e := range d.members {
		if name != except && !e.leaving {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// hasOther: a live member other than except is known.
func (d *directory) hasOther(except string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range d.members {
		if name != except {
			return true
		}
	}
	return false
}

// isStaying: the node is a live member that is not leaving.
func (d *directory) isStaying(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.members[name]
	return ok && !e.leaving
}

// hasAddr: a live member has this address.
func (d *directory) hasAddr(ap netip.AddrPort) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.members {
		if e.addr == ap {
			return true
		}
	}
	return false
}
