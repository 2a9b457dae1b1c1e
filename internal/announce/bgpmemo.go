package announce

import (
	"cmp"
	"maps"
	"net/netip"
	"reflect"
	"slices"

	"github.com/herald-lb/herald/internal/config"
)

// BGPMemo decides like BGP, remembering between calls what each Service
// contributes to which prefix and each prefix's routes: a call works out
// again only the Services that changed (by Key and Rev; a Service of Rev
// 0 always counts as changed) and the prefixes they touched, unless what
// every route depends on changed (the configuration, the node's name,
// labels and eligibility), which starts over. When no Service changed it
// returns the last result after a comparison that allocates nothing. BGP
// does not depend on liveness, so member-list and Lease changes, which
// trigger most reconciles, cost that comparison. Its result always equals
// BGP's for the same State. The zero value is ready to use; it is not
// safe for concurrent use, and callers must not modify the result.
type BGPMemo struct {
	valid bool // the fields below describe the last call
	node  string
	cfg   any
	me    *node
	svcs  []holderRev // the last call's Services, in its order
	res   BGPResult

	bySvc    map[string]*bgpSvc
	byPrefix map[netip.Prefix]*bgpPrefix
	prefixes []netip.Prefix // the keys of byPrefix, in route order
	gen      uint64
	worked   int  // Services the last call worked out again
	same     bool // the last call returned the call before's result
	changes  BGPChanges
	// routeCount is the number of routes of all prefixes; stale says
	// res.Routes does not show them yet (Result lays them out).
	routeCount int
	stale      bool
	// shared are the Services whose contributions depend on other
	// Services' endpoints and on other nodes (an address shared with
	// other externalTrafficPolicy: Local Services): every call works
	// them out again.
	shared map[string]bool
}

// BGPChanges says what the last Decide worked out again, so that a caller
// can hand on the change instead of the result.
type BGPChanges struct {
	// All: the memo started over (the configuration or the node
	// changed, or it is the first call), and the caller takes the whole
	// result. Prefixes and Services are then empty.
	All bool
	// Prefixes whose routes were worked out again (maybe to none), in
	// route order.
	Prefixes []netip.Prefix
	// Services whose contributions were worked out again or forgotten,
	// sorted. Together with the Services of the routes of Prefixes, they
	// are every Service whose routes may have changed.
	Services []string
}

// bgpSvc is what one Service (at one Rev) gives the node's routes.
type bgpSvc struct {
	rev      uint64
	seen     uint64 // the call that last saw the Service
	contribs []bgpContrib
}

// bgpContrib is one advertisement covering one prefix for one peer on
// behalf of a Service.
type bgpContrib struct {
	k      routeKey
	ad     *config.BGPAdvertisement
	weight uint32 // weightOf the Service for ad
}

// bgpPrefix is one prefix's routes and the Services that contribute to
// it, once per contribution (mostly one Service; more when addresses are
// shared or aggregated).
type bgpPrefix struct {
	svcs   []string
	routes []Route
}

// Decide returns BGP(st, nodeName).
func (m *BGPMemo) Decide(st State, nodeName string) BGPResult {
	m.Update(st, nodeName, Changes{All: true})
	return m.Result()
}

// Update brings the memo up to date with st for nodeName, given what
// changed since its last call: every Service (ch.All), or only the
// Services with ch.Keys (a new Rev, created or deleted; st.Services
// sorted by key), whose routes alone it works out again, so that its
// work is proportional to the change. When what every route depends on
// changed (the configuration, the node), or the memo is empty, any change
// set is All. It does not lay out the result's routes: Changes,
// PrefixRoutes and ServiceRoutes tell it, Result lays it out.
func (m *BGPMemo) Update(st State, nodeName string, ch Changes) {
	me := st.node(nodeName)
	if ch.All || me == nil || !m.sameWorld(st, nodeName, me) {
		m.updateAll(st, nodeName, me)
		return
	}
	m.updateKeys(st, me, ch.Keys)
}

// updateKeys is Update of the Services with these keys alone.
func (m *BGPMemo) updateKeys(st State, me *node, keys []string) {
	m.changes.All, m.changes.Prefixes, m.changes.Services = false, m.changes.Prefixes[:0], m.changes.Services[:0]
	m.worked = 0
	touched := map[netip.Prefix]bool{}
	sb := newSharedBGP(st, me.name)
	for _, key := range m.withShared(keys, sb) {
		e := m.bySvc[key]
		i, found := slices.BinarySearchFunc(st.Services, key, func(s Service, k string) int { return cmp.Compare(s.Key, k) })
		switch {
		case !found && e == nil:
		case !found:
			m.changes.Services = append(m.changes.Services, key)
			m.drop(key, e, touched)
			delete(m.bySvc, key)
		default:
			m.rework(st, &st.Services[i], e, me, touched, sb)
		}
	}
	if len(touched) > 0 {
		m.route(touched)
	}
	m.noteChanges(touched)
	m.same = len(m.changes.Services) == 0
	m.valid = false // m.svcs no longer describes the Services: Update compares none
}

// Result is the last Update's result, BGP(st, nodeName). Its routes are
// laid out afresh (O(routes)) the first time it is asked for after an
// Update that changed them; a caller that hands on Changes instead need
// not ask.
func (m *BGPMemo) Result() BGPResult {
	if m.stale {
		routes := make([]Route, 0, m.routeCount)
		for _, prefix := range m.prefixes {
			routes = append(routes, m.byPrefix[prefix].routes...)
		}
		m.res.Routes, m.stale = routes, false
	}
	return m.res
}

// RouteCount is len(Result().Routes), without laying them out.
func (m *BGPMemo) RouteCount() int { return m.routeCount }

// updateAll is Update of every Service: those whose Rev did not change
// keep their contributions, unless what every route depends on changed.
func (m *BGPMemo) updateAll(st State, nodeName string, me *node) {
	m.changes.Prefixes, m.changes.Services = m.changes.Prefixes[:0], m.changes.Services[:0]
	if m.unchanged(st, nodeName, me) {
		m.worked, m.same, m.changes.All = 0, true, false
		return
	}
	m.same = false
	if me == nil {
		*m = BGPMemo{changes: BGPChanges{All: true}}
		return
	}
	all := !m.sameWorld(st, nodeName, me)
	if all {
		m.reset(st, nodeName, me)
	}
	m.update(st, me)
	if m.changes.All = all; all {
		m.changes.Prefixes, m.changes.Services = m.changes.Prefixes[:0], m.changes.Services[:0]
	}
	m.svcs = m.svcs[:0]
	m.valid = true // unless a Service has no Rev
	for i := range st.Services {
		r := revOf(&st.Services[i])
		m.svcs = append(m.svcs, r)
		m.valid = m.valid && r.rev != 0
	}
}

// Worked is how many Services the last Decide worked out again (the
// others' contributions it took from the memo).
func (m *BGPMemo) Worked() int { return m.worked }

// Same reports whether the last Decide found nothing changed since the
// call before and returned that call's result.
func (m *BGPMemo) Same() bool { return m.same }

// Changes says what the last Decide worked out again. The caller must not
// modify it; the next Decide reuses its memory.
func (m *BGPMemo) Changes() BGPChanges { return m.changes }

// PrefixRoutes returns the routes of one prefix in the last result, none
// when it has none.
func (m *BGPMemo) PrefixRoutes(p netip.Prefix) []Route {
	if e := m.byPrefix[p]; e != nil {
		return e.routes
	}
	return nil
}

// ServiceRoutes returns the routes of the last result that carry a
// Service's addresses, in route order.
func (m *BGPMemo) ServiceRoutes(key string) []Route {
	e := m.bySvc[key]
	if e == nil {
		return nil
	}
	var out []Route
	var seen []netip.Prefix
	for _, c := range e.contribs {
		if slices.Contains(seen, c.k.prefix) {
			continue
		}
		seen = append(seen, c.k.prefix)
		for _, r := range m.PrefixRoutes(c.k.prefix) {
			if _, ok := slices.BinarySearch(r.Services, key); ok { // an aggregate's route may carry thousands
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Route) int { return comparePrefixes(a.Prefix, b.Prefix) })
	return out
}

// unchanged reports whether st and the node are those of the last call.
// It allocates nothing: it runs at every reconcile. A valid memo holds no
// Rev 0, so a Service without a Rev never matches.
func (m *BGPMemo) unchanged(st State, nodeName string, me *node) bool {
	if !m.valid || len(m.svcs) != len(st.Services) || len(m.shared) > 0 {
		return false
	}
	for i := range st.Services {
		if m.svcs[i] != revOf(&st.Services[i]) {
			return false
		}
	}
	return m.sameWorld(st, nodeName, me)
}

// sameWorld reports whether the configuration and the node are those the
// remembered contributions were worked out for.
func (m *BGPMemo) sameWorld(st State, nodeName string, me *node) bool {
	return m.bySvc != nil && m.node == nodeName && reflect.DeepEqual(m.me, me) && reflect.DeepEqual(m.cfg, configValue(st))
}

// reset forgets every contribution and chooses the node's sessions.
func (m *BGPMemo) reset(st State, nodeName string, me *node) {
	*m = BGPMemo{node: nodeName, cfg: configValue(st), me: me, svcs: m.svcs[:0],
		bySvc: map[string]*bgpSvc{}, byPrefix: map[netip.Prefix]*bgpPrefix{}}
	for _, p := range st.Config.Peers {
		if p.SelectsNode(me.labels) {
			m.res.Peers = append(m.res.Peers, p)
		}
	}
	if me.eligible && len(m.res.Peers) > 0 {
		m.res.Routes = []Route{} // as BGP: routes are due, maybe none
	}
}

// update works out the changed Services' contributions, forgets those of
// Services that are gone, and routes again the prefixes they touched.
// Service Keys are unique in a State.
func (m *BGPMemo) update(st State, me *node) {
	m.gen++
	m.worked = 0
	touched := map[netip.Prefix]bool{}
	sb := newSharedBGP(st, me.name)
	for i := range st.Services {
		m.rework(st, &st.Services[i], m.bySvc[st.Services[i].Key], me, touched, sb)
	}
	if len(st.Services) < len(m.bySvc) {
		for key, e := range m.bySvc {
			if e.seen != m.gen {
				m.changes.Services = append(m.changes.Services, key)
				m.drop(key, e, touched)
				delete(m.bySvc, key)
			}
		}
	}
	if len(touched) > 0 {
		m.route(touched)
	}
	m.noteChanges(touched)
}

// rework works out one Service's contributions again unless its Rev is
// the one they were worked out for (Rev 0: always) and it shares no
// Local address, replacing e's. A sharing Service whose contributions
// came out the same counts as unchanged.
func (m *BGPMemo) rework(st State, s *Service, e *bgpSvc, me *node, touched map[netip.Prefix]bool, sb *sharedBGP) {
	sharing := sb.holds(s)
	if e != nil && s.Rev != 0 && e.rev == s.Rev && !sharing && !m.shared[s.Key] {
		e.seen = m.gen
		return
	}
	m.setShared(s.Key, sharing)
	if e != nil && s.Rev != 0 && e.rev == s.Rev {
		if c := m.contributions(st, s, me, sb); slices.Equal(c, e.contribs) {
			e.seen = m.gen
			return
		}
	}
	m.worked++
	m.changes.Services = append(m.changes.Services, s.Key)
	if e != nil {
		m.drop(s.Key, e, touched)
	}
	e = &bgpSvc{rev: s.Rev, seen: m.gen, contribs: m.contributions(st, s, me, sb)}
	m.bySvc[s.Key] = e
	m.add(s.Key, e, touched)
}

// noteChanges lists the changed Services and the touched prefixes, sorted.
func (m *BGPMemo) noteChanges(touched map[netip.Prefix]bool) {
	slices.Sort(m.changes.Services)
	for p := range touched {
		m.changes.Prefixes = append(m.changes.Prefixes, p)
	}
	slices.SortFunc(m.changes.Prefixes, comparePrefixes)
}

// contributions are what one Service gives the node's routes.
func (m *BGPMemo) contributions(st State, s *Service, me *node, sb *sharedBGP) []bgpContrib {
	if !me.eligible || len(m.res.Peers) == 0 || !advertisesFrom(s, me.name) {
		return nil
	}
	var out []bgpContrib
	st.eachContribution(s, *me, m.res.Peers, sb, func(k routeKey, ad *config.BGPAdvertisement) {
		out = append(out, bgpContrib{k: k, ad: ad, weight: weightOf(s, ad, me.name)})
	})
	return out
}

func (m *BGPMemo) add(key string, e *bgpSvc, touched map[netip.Prefix]bool) {
	for _, c := range e.contribs {
		p := m.byPrefix[c.k.prefix]
		if p == nil {
			p = &bgpPrefix{}
			m.byPrefix[c.k.prefix] = p
		}
		p.svcs = append(p.svcs, key)
		touched[c.k.prefix] = true
	}
}

func (m *BGPMemo) drop(key string, e *bgpSvc, touched map[netip.Prefix]bool) {
	for _, c := range e.contribs {
		p := m.byPrefix[c.k.prefix]
		if i := slices.Index(p.svcs, key); i >= 0 {
			p.svcs = slices.Delete(p.svcs, i, i+1)
		}
		touched[c.k.prefix] = true
	}
}

// route merges the touched prefixes' contributions into routes, as BGP
// does for every prefix, in one merge and one grouping for all of them
// (not one per prefix: working everything out again would cost thousands
// of small maps), and keeps the prefixes in BGP's order for Result.
func (m *BGPMemo) route(touched map[netip.Prefix]bool) {
	merged := mergedAttrs{}
	for prefix := range touched {
		if p := m.byPrefix[prefix]; p != nil {
			m.routeCount -= len(p.routes)
		}
	}
	m.layOut(touched)
	for prefix := range touched {
		p := m.byPrefix[prefix]
		if p == nil {
			continue
		}
		keys := p.svcs
		if len(keys) > 1 {
			keys = slices.Compact(slices.Sorted(slices.Values(keys)))
		}
		for _, key := range keys {
			for _, c := range m.bySvc[key].contribs {
				if c.k.prefix == prefix {
					merged.add(c.k, c.ad, key, c.weight)
				}
			}
		}
	}
	grouped := group(merged) // sorted by prefix: one run per touched prefix
	for i := 0; i < len(grouped); {
		j := i + 1
		for j < len(grouped) && grouped[j].Prefix == grouped[i].Prefix {
			j++
		}
		m.byPrefix[grouped[i].Prefix].routes = grouped[i:j:j]
		i = j
	}
	m.routeCount += len(grouped)
	m.stale = true
}

// layOut forgets the touched prefixes no Service contributes to any more
// and keeps m.prefixes, the others, in route order: one by one for a few
// changes, sorted anew for many (inserting thousands one by one would
// move the slice thousands of times).
func (m *BGPMemo) layOut(touched map[netip.Prefix]bool) {
	if len(touched) > 16 {
		for prefix := range touched {
			if len(m.byPrefix[prefix].svcs) == 0 {
				delete(m.byPrefix, prefix)
			}
		}
		m.prefixes = slices.AppendSeq(m.prefixes[:0], maps.Keys(m.byPrefix))
		slices.SortFunc(m.prefixes, comparePrefixes)
		return
	}
	for prefix := range touched {
		i, found := slices.BinarySearchFunc(m.prefixes, prefix, comparePrefixes)
		switch {
		case len(m.byPrefix[prefix].svcs) == 0:
			delete(m.byPrefix, prefix)
			if found {
				m.prefixes = slices.Delete(m.prefixes, i, i+1)
			}
		case !found:
			m.prefixes = slices.Insert(m.prefixes, i, prefix)
		}
	}
}

// comparePrefixes orders prefixes as BGP orders routes: by address, then
// by length.
func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Bits(), b.Bits())
}

// setShared notes whether the Service's contributions depend on its
// sharers'.
func (m *BGPMemo) setShared(key string, sharing bool) {
	switch {
	case sharing && m.shared == nil:
		m.shared = map[string]bool{key: true}
	case sharing:
		m.shared[key] = true
	default:
		delete(m.shared, key)
	}
}

// withShared adds to the changed keys (sorted) the Services that share a
// Local address now or did at the last call: their contributions depend
// on each other's endpoints and on the other nodes.
func (m *BGPMemo) withShared(keys []string, sb *sharedBGP) []string {
	if len(m.shared) == 0 && sb == nil {
		return keys
	}
	out := slices.Clone(keys)
	for k := range m.shared {
		out = append(out, k)
	}
	if sb != nil {
		for _, h := range sb.byIP {
			for _, s := range h {
				out = append(out, s.Key)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
