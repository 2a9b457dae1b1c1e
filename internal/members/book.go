package members

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// book is this process's memory of every node it has seen. Unlike
// memberlist's own node list it does not forget a dead node by itself:
// memberlist reaps dead nodes after GossipToTheDead without telling anyone,
// and a reaped node must not fall back to Unknown. Only retain forgets, a
// node Kubernetes no longer has.
type book struct {
	mu    sync.Mutex
	nodes map[string]entry
	// gen counts the changes: a decision taken from states read after
	// gen was read has seen every change up to gen (see welcome.go).
	gen uint64
	// data is the data each node last published (Config.NodeData),
	// remembered as long as the node is.
	data map[string][]byte
}

type entry struct {
	state State
	since time.Time
	// upGen is the generation at which the node last came up (Alive or
	// Suspect after Unknown, Dead or Left).
	upGen uint64
}

// up: a state in which the node's speaker counts as running (the speaker
// treats Suspect like Alive).
func up(s State) bool { return s == Alive || s == Suspect }

// transition is one change of one node's state, returned so the caller
// can log it and count it outside the lock.
type transition struct {
	node     string
	from, to State
	at       time.Time
}

func newBook() *book {
	return &book{nodes: make(map[string]entry), data: make(map[string][]byte)}
}

// setData records the data a node published (nil: none).
func (b *book) setData(node string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if data == nil {
		delete(b.data, node)
		return
	}
	b.data[node] = data
}

// nodeData returns the data a node last published, nil when none.
func (b *book) nodeData(node string) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data[node]
}

// alive records that the node is a member in good standing (joined,
// rejoined after Dead or Left, updated, or refuted a suspicion).
func (b *book) alive(node string) (transition, bool) {
	return b.move(node, Alive, func(State) bool { return true })
}

// left records a graceful leave (announced, or the leave itself).
func (b *book) left(node string) (transition, bool) {
	return b.move(node, Left, func(State) bool { return true })
}

// dead records that memberlist declared the node gone without a leave
// intent. A node that announced its leave stays Left.
func (b *book) dead(node string) (transition, bool) {
	return b.move(node, Dead, func(from State) bool { return from != Left })
}

// suspect records that this speaker's probe of an Alive node failed. It
// never overrides Dead or Left: a late probe result must not resurrect a
// node the cluster has already declared gone.
func (b *book) suspect(node string) (transition, bool) {
	return b.move(node, Suspect, func(from State) bool { return from == Alive })
}

// reachable records that this speaker's probe of the node succeeded; it
// clears Suspect only.
func (b *book) reachable(node string) (transition, bool) {
	return b.move(node, Alive, func(from State) bool { return from == Suspect })
}

// reported records what another member remembers of a node this process
// has never seen: Dead or Left (see reports.go). A node this process has
// seen keeps the state it saw.
func (b *book) reported(r report) (transition, bool) {
	if r.state != Dead && r.state != Left {
		return transition{}, false
	}
	return b.move(r.node, r.state, func(from State) bool { return from == Unknown })
}

// gone returns the nodes remembered Dead or Left, sorted by name: what
// this process reports to the members it exchanges state with.
func (b *book) gone() []report {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []report
	for name, e := range b.nodes {
		if e.state == Dead || e.state == Left {
			out = append(out, report{node: name, state: e.state})
		}
	}
	slices.SortFunc(out, func(a, b report) int { return strings.Compare(a.node, b.node) })
	return out
}

func (b *book) move(node string, to State, allowed func(from State) bool) (transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	from := b.nodes[node].state
	if from == to || !allowed(from) {
		return transition{}, false
	}
	now := time.Now()
	b.gen++
	e := entry{state: to, since: now, upGen: b.nodes[node].upGen}
	if up(to) && !up(from) {
		e.upGen = b.gen
	}
	b.nodes[node] = e
	return transition{node: node, from: from, to: to, at: now}, true
}

// generation returns the number of changes so far.
func (b *book) generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen
}

// upSince reports whether the node is up and, if so, the generation at
// which it came up.
func (b *book) upSince(node string) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.nodes[node]
	return e.upGen, up(e.state)
}

// retain forgets every node that is Dead or Left and not in keep (the
// Node objects that still exist), and returns their names. Alive and
// Suspect nodes stay: their speaker still runs, whatever Kubernetes says.
func (b *book) retain(keep map[string]bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var gone []string
	for name, e := range b.nodes {
		if !keep[name] && (e.state == Dead || e.state == Left) {
			delete(b.nodes, name)
			delete(b.data, name)
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	return gone
}

func (b *book) state(node string) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nodes[node].state
}

// since returns when the node entered its current state (zero if Unknown).
func (b *book) since(node string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nodes[node].since
}

func (b *book) snapshot() map[string]State {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]State, len(b.nodes))
	for name, e := range b.nodes {
		out[name] = e.state
	}
	return out
}

// counts returns how many remembered nodes are in each state.
func (b *book) counts() map[State]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[State]int, len(knownStates()))
	for _, e := range b.nodes {
		out[e.state]++
	}
	return out
}
