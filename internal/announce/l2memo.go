package announce

import (
	"net/netip"
	"reflect"
	"slices"
)

// L2Memo decides like L2, remembering each address's decision between
// calls: a call decides anew only the addresses whose holding Services
// changed (by Key and Rev), unless what every decision depends on changed
// (the configuration, the nodes' names, labels and eligibility, their
// liveness), which decides every address anew. Its result always equals
// L2's for the same State. The zero value is ready to use; it is not safe
// for concurrent use.
type L2Memo struct {
	cfg     any // the configuration of the last call, compared by value
	nodes   []node
	live    []bool
	entries []l2MemoEntry // by address
	decided int           // addresses the last call decided anew

	// Memory reused between calls (at 10,000 Services a call would
	// otherwise allocate megabytes): the entries' other buffer, the
	// grouping by address, and the result's owners.
	spare   []l2MemoEntry
	scratch holderScratch
	owners  []L2Owner
}

// l2MemoEntry is one address's decision (d.owner.IP is the address) and
// the Services it was decided for.
type l2MemoEntry struct {
	holders []holderRev
	d       l2Decision
}

// holderRev identifies a Service's conversion: its Rev, and its Key for
// Services of Rev 0 (never reused).
type holderRev struct {
	key string
	rev uint64
}

// Decide returns L2(st), deciding only what changed since the last call.
// The result's Owners are valid until the next call (their memory is
// reused); copy what must outlive it.
func (m *L2Memo) Decide(st State) L2Result {
	nodes, _ := m.enter(st)
	res := L2Result{Unowned: map[netip.Addr]string{}}
	hs := st.holdersWith(&m.scratch)
	next := slices.Grow(m.spare[:0], len(hs))
	res.Owners = slices.Grow(m.owners[:0], len(hs))
	old := m.entries // sorted by address, as hs
	for _, h := range hs {
		for len(old) > 0 && old[0].d.owner.IP.Less(h.ip) {
			old = old[1:]
		}
		var e l2MemoEntry
		if len(old) > 0 && old[0].d.owner.IP == h.ip && sameHolders(old[0].holders, h.svcs) {
			e = old[0]
		} else {
			e = l2MemoEntry{holders: holderRevs(h.svcs), d: decideL2(st, nodes, h.ip, h.svcs)}
			m.decided++
		}
		next = append(next, e)
		res.add(e.d)
	}
	m.owners = res.Owners
	clear(m.entries) // the other buffer now: drop what it holds
	m.spare, m.entries = m.entries[:0], next
	if len(res.Owners) == 0 {
		res.Owners = nil // as L2
	}
	return res
}

// enter starts a call on st: it reports whether the configuration, the
// nodes and their liveness are those of the last call (same; otherwise it
// forgets every decision) and remembers st's.
func (m *L2Memo) enter(st State) (nodes []node, same bool) {
	nodes = st.nodes()
	live := make([]bool, len(nodes))
	for i, n := range nodes {
		live[i] = st.live(n.name)
	}
	if same = m.sameWorld(st, nodes, live); !same {
		m.entries = nil
	}
	m.cfg, m.nodes, m.live, m.decided = configValue(st), nodes, live, 0
	return nodes, same
}

// Decided is how many addresses the last Decide decided anew (the others
// it took from the memo).
func (m *L2Memo) Decided() int { return m.decided }

// sameWorld reports whether the configuration, the nodes and their
// liveness are those of the last call.
func (m *L2Memo) sameWorld(st State, nodes []node, live []bool) bool {
	return m.entries != nil && slices.Equal(live, m.live) && reflect.DeepEqual(nodes, m.nodes) &&
		reflect.DeepEqual(configValue(st), m.cfg)
}

// configValue is the configuration as compared between calls: by value,
// since every reconcile builds a new one.
func configValue(st State) any {
	if st.Config == nil {
		return nil
	}
	return *st.Config
}

func sameHolders(have []holderRev, svcs []*Service) bool {
	if len(have) != len(svcs) {
		return false
	}
	for i, s := range svcs {
		if s.Rev == 0 || have[i] != revOf(s) {
			return false
		}
	}
	return true
}

func holderRevs(svcs []*Service) []holderRev {
	out := make([]holderRev, len(svcs))
	for i, s := range svcs {
		out[i] = revOf(s)
	}
	return out
}

func revOf(s *Service) holderRev { return holderRev{s.Key, s.Rev} }

// DecideChanged brings the memo up to date when, since its last call,
// only the Services holding ips changed: it decides those addresses again
// (holders returns the Services of st holding an address, sorted by key,
// as Decide groups them) and nothing else, so that its work is
// proportional to the change. It returns false, having forgotten every
// decision, when what every decision depends on changed (the
// configuration, the nodes, their liveness) or the memo is empty; call
// Decide then. Owner reads the decisions.
func (m *L2Memo) DecideChanged(st State, ips []netip.Addr, holders func(netip.Addr) []*Service) bool {
	nodes, same := m.enter(st)
	if !same {
		return false
	}
	for _, ip := range ips {
		i, found := slices.BinarySearchFunc(m.entries, ip, entryAt)
		svcs := holders(ip)
		switch {
		case len(svcs) == 0 && found:
			m.entries = slices.Delete(m.entries, i, i+1)
		case len(svcs) == 0:
		case found && sameHolders(m.entries[i].holders, svcs):
		default:
			e := l2MemoEntry{holders: holderRevs(svcs), d: decideL2(st, nodes, ip, svcs)}
			m.decided++
			if found {
				m.entries[i] = e
			} else {
				m.entries = slices.Insert(m.entries, i, e)
			}
		}
	}
	return true
}

// Owner returns the memo's owner of ip, as Decide's result lists it:
// false when no node owns it (none eligible, no L2Advertisement, or no
// Service holds it).
func (m *L2Memo) Owner(ip netip.Addr) (L2Owner, bool) {
	i, found := slices.BinarySearchFunc(m.entries, ip, entryAt)
	if !found {
		return L2Owner{}, false
	}
	d := m.entries[i].d
	if d.uncovered || d.unowned != "" {
		return L2Owner{}, false
	}
	return d.owner, true
}

func entryAt(e l2MemoEntry, ip netip.Addr) int { return e.d.owner.IP.Compare(ip) }
