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
	// res is the result of the entries when resFresh (Update of every
	// address builds it as it goes).
	res      L2Result
	resFresh bool
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

// Changes says what changed since a memo's last call: everything (All),
// or only the Services with Keys (sorted), which hold or held the
// addresses IPs (sorted). A caller that does not know what changed says
// All.
type Changes struct {
	All  bool
	IPs  []netip.Addr
	Keys []string
}

// Merge is the change set of c followed by o: All when either is, else
// both sets' addresses and Services.
func (c Changes) Merge(o Changes) Changes {
	switch {
	case c.All || o.All:
		return Changes{All: true}
	case len(c.IPs)+len(c.Keys) == 0:
		return o
	case len(o.IPs)+len(o.Keys) == 0:
		return c
	}
	return Changes{
		IPs:  slices.Compact(slices.SortedFunc(slices.Values(append(slices.Clone(c.IPs), o.IPs...)), netip.Addr.Compare)),
		Keys: slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(c.Keys), o.Keys...)))),
	}
}

// Update brings the memo up to date with st, given what changed since its
// last call: every address (ch.All), or only the addresses ch.IPs (holders
// returns the Services of st holding an address, sorted by key, as L2
// groups them; unused with All). It decides an address anew only when
// its holders changed (by Key and Rev), so that its work is proportional
// to the change. When what every decision depends on changed (the
// configuration, the nodes, their liveness) or the memo is empty, it
// forgets every decision and any change set is All. It returns the change
// set it applied. Result and Owner read the decisions.
func (m *L2Memo) Update(st State, ch Changes, holders func(netip.Addr) []*Service) Changes {
	nodes, same := m.enter(st)
	if ch.All || !same {
		m.updateAll(st, nodes)
		return Changes{All: true}
	}
	m.resFresh = false
	for _, ip := range ch.IPs {
		i, found := slices.BinarySearchFunc(m.entries, ip, entryAt)
		svcs := holders(ip)
		switch {
		case len(svcs) == 0 && found:
			m.entries = slices.Delete(m.entries, i, i+1)
		case len(svcs) == 0:
		case found:
			m.step(&m.entries[i], st, nodes, ip, &m.entries[i], svcs)
		default:
			m.entries = slices.Insert(m.entries, i, l2MemoEntry{})
			m.step(&m.entries[i], st, nodes, ip, nil, svcs)
		}
	}
	return ch
}

// updateAll is Update of every address: the entries are built again in
// order, each by step from the address's old entry, and the result with
// them.
func (m *L2Memo) updateAll(st State, nodes []node) {
	hs := st.holdersWith(&m.scratch)
	next := slices.Grow(m.spare[:0], len(hs))
	res := L2Result{Unowned: map[netip.Addr]string{}, Owners: slices.Grow(m.owners[:0], len(hs))}
	old := m.entries // sorted by address, as hs
	for _, h := range hs {
		for len(old) > 0 && old[0].d.owner.IP.Less(h.ip) {
			old = old[1:]
		}
		var prev *l2MemoEntry
		if len(old) > 0 && old[0].d.owner.IP == h.ip {
			prev = &old[0]
		}
		next = append(next, l2MemoEntry{})
		e := &next[len(next)-1]
		m.step(e, st, nodes, h.ip, prev, h.svcs)
		res.add(e.d)
	}
	clear(m.entries) // the other buffer now: drop what it holds
	m.spare, m.entries = m.entries[:0], next
	m.owners, m.res, m.resFresh = res.Owners, res, true
}

// step is the memo's one decision: it sets e to the entry of ip held by
// svcs (some), old's when its holders are the same, decided anew
// otherwise. e and old may be the same entry.
func (m *L2Memo) step(e *l2MemoEntry, st State, nodes []node, ip netip.Addr, old *l2MemoEntry, svcs []*Service) {
	if old != nil && sameHolders(old.holders, svcs) {
		if e != old {
			*e = *old
		}
		return
	}
	m.decided++
	*e = l2MemoEntry{holders: holderRevs(svcs), d: decideL2(st, nodes, ip, svcs)}
}

// Result is L2(st) for the st of the last Update. Its Owners are valid
// until the next Update or Result (their memory is reused); copy what
// must outlive it.
func (m *L2Memo) Result() L2Result {
	if !m.resFresh {
		res := L2Result{Unowned: map[netip.Addr]string{}, Owners: m.owners[:0]}
		for i := range m.entries {
			res.add(m.entries[i].d)
		}
		m.owners, m.res, m.resFresh = res.Owners, res, true
	}
	res := m.res
	if len(res.Owners) == 0 {
		res.Owners = nil // as L2
	}
	return res
}

// Decide returns L2(st): Update with everything changed, then Result.
func (m *L2Memo) Decide(st State) L2Result {
	m.Update(st, Changes{All: true}, nil)
	return m.Result()
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

// Owner returns the memo's owner of ip, as Result lists it:
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
