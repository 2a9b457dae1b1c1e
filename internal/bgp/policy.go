package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	api "github.com/osrg/gobgp/v4/api"
)

// Names of the two global policies this package installs.
const (
	exportPolicyName = "herald-export"
	importPolicyName = "herald-import"
)

// buildPolicies renders the desired deliveries as one global export policy
// (default action: reject) plus an import policy that keeps only our own
// paths in the RIB, so routes learned from routers are never re-advertised.
//
// Prefixes with the same delivery share a prefix set (one per family); the
// peers of a delivery that receive the same attributes share a neighbor set;
// each (prefix set, neighbor set) pair is one ACCEPT statement carrying the
// attributes. A prefix not accepted for a peer is rejected by default.
func buildPolicies(deliveries map[netip.Prefix]delivery) *api.SetPoliciesRequest {
	req, _ := buildPolicyLayout(deliveries)
	return req
}

// policyLayout says where each delivery's prefixes sit in an installed
// policy, by delivery key: a path change whose deliveries all have a
// prefix set already edits those sets instead of installing the policy
// again (see ApplyPaths).
type policyLayout map[string]policyGroup

// policyGroup is one delivery's place: the number in its sets' names and
// the families that have a prefix set, with its statements.
type policyGroup struct {
	index int
	fams  [2]bool // IPv4Unicast, IPv6Unicast
}

// prefixSetFor names the prefix set of a delivery key's family, false
// when the policy has none (the statements for it do not exist either).
func (l policyLayout) prefixSetFor(key string, fam Family) (string, bool) {
	g, ok := l[key]
	if !ok || !g.fams[fam-IPv4Unicast] {
		return "", false
	}
	return prefixSetName(g.index, fam), true
}

func prefixSetName(group int, fam Family) string {
	return fmt.Sprintf("herald-p%d-%s", group, famTag(fam))
}

// buildPolicyLayout is buildPolicies, with the layout of what it built.
func buildPolicyLayout(deliveries map[netip.Prefix]delivery) (*api.SetPoliciesRequest, policyLayout) {
	req := &api.SetPoliciesRequest{}
	layout := policyLayout{}
	export := &api.Policy{Name: exportPolicyName}
	for i, g := range groupByDelivery(deliveries) {
		nbrSets := neighborSets(g.delivery, i)
		pg := policyGroup{index: i}
		for _, fam := range []Family{IPv4Unicast, IPv6Unicast} {
			ps := prefixSet(g.prefixes, fam, i)
			if ps == nil {
				continue
			}
			pg.fams[fam-IPv4Unicast] = true
			req.DefinedSets = append(req.DefinedSets, ps)
			for _, ns := range nbrSets {
				export.Statements = append(export.Statements, acceptStatement(ps.Name, ns))
			}
		}
		for _, ns := range nbrSets {
			req.DefinedSets = append(req.DefinedSets, ns.set)
		}
		layout[g.key] = pg
	}
	req.Policies = []*api.Policy{export, importPolicy()}
	return req, layout
}

// deliveryGroup is the prefixes that share one delivery.
type deliveryGroup struct {
	key      string
	delivery delivery
	prefixes []netip.Prefix
}

func groupByDelivery(deliveries map[netip.Prefix]delivery) []deliveryGroup {
	byKey := map[string]*deliveryGroup{}
	for p, d := range deliveries {
		k := deliveryKey(d)
		g := byKey[k]
		if g == nil {
			g = &deliveryGroup{key: k, delivery: d}
			byKey[k] = g
		}
		g.prefixes = append(g.prefixes, p)
	}
	out := make([]deliveryGroup, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		g := byKey[k]
		slices.SortFunc(g.prefixes, comparePrefix)
		out = append(out, *g)
	}
	return out
}

// neighborSet is the peers of one delivery that receive the same attributes.
type neighborSet struct {
	set   *api.DefinedSet
	attrs attrs
}

func neighborSets(d delivery, group int) []neighborSet {
	type peers struct {
		addrs []netip.Addr
		attrs attrs
	}
	byKey := map[string]*peers{}
	for addr, a := range d {
		k := attrsKey(a)
		if byKey[k] == nil {
			byKey[k] = &peers{attrs: a}
		}
		byKey[k].addrs = append(byKey[k].addrs, addr)
	}
	out := make([]neighborSet, 0, len(byKey))
	for j, k := range sortedKeys(byKey) {
		ps := byKey[k]
		slices.SortFunc(ps.addrs, netip.Addr.Compare)
		set := &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_NEIGHBOR, Name: fmt.Sprintf("herald-n%d-%d", group, j)}
		for _, a := range ps.addrs {
			// GoBGP matches neighbors by address alone: an unnumbered
			// peer's interface (the zone) is not part of the set.
			set.List = append(set.List, a.WithZone("").String())
		}
		out = append(out, neighborSet{set: set, attrs: ps.attrs})
	}
	return out
}

func prefixSet(prefixes []netip.Prefix, fam Family, group int) *api.DefinedSet {
	set := &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX}
	for _, p := range prefixes {
		if familyOf(p) == fam {
			set.Prefixes = append(set.Prefixes, apiPrefix(p))
		}
	}
	if len(set.Prefixes) == 0 {
		return nil
	}
	set.Name = prefixSetName(group, fam)
	return set
}

// apiPrefix matches exactly p.
func apiPrefix(p netip.Prefix) *api.Prefix {
	bits := uint32(p.Bits())
	return &api.Prefix{IpPrefix: p.String(), MaskLengthMin: bits, MaskLengthMax: bits}
}

func acceptStatement(prefixSet string, ns neighborSet) *api.Statement {
	return &api.Statement{
		Name: prefixSet + "-to-" + ns.set.Name,
		Conditions: &api.Conditions{
			PrefixSet:   &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: prefixSet},
			NeighborSet: &api.MatchSet{Type: api.MatchSet_TYPE_ANY, Name: ns.set.Name},
		},
		Actions: attrActions(ns.attrs),
	}
}

// attrActions turns per-session attributes into policy actions.
func attrActions(a attrs) *api.Actions {
	act := &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT}
	if len(a.communities) > 0 {
		act.Community = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: communityStrings(a.communities)}
	}
	if len(a.large) > 0 {
		act.LargeCommunity = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD, Communities: largeStrings(a.large)}
	}
	if a.linkBW > 0 {
		act.ExtCommunity = &api.CommunityAction{Type: api.CommunityAction_TYPE_ADD,
			Communities: []string{linkBandwidthCommunity(a.linkAS, a.linkBW)}}
	}
	if a.hasLocalPref {
		act.LocalPref = &api.LocalPrefAction{Value: a.localPref}
	}
	if a.nextHop.IsValid() {
		act.Nexthop = &api.NexthopAction{Address: a.nextHop.String()}
	}
	if a.nextHopSelf {
		act.Nexthop = &api.NexthopAction{Self: true}
	}
	return act
}

func importPolicy() *api.Policy {
	return &api.Policy{Name: importPolicyName, Statements: []*api.Statement{{
		Name:       importPolicyName + "-local",
		Conditions: &api.Conditions{RouteType: api.Conditions_ROUTE_TYPE_LOCAL},
		Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT},
	}}}
}

// globalAssignments are installed once per server: export and import on
// the global RIB, both rejecting what the policies do not accept.
func globalAssignments() []*api.PolicyAssignment {
	return []*api.PolicyAssignment{
		{Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_EXPORT,
			Policies: []*api.Policy{{Name: exportPolicyName}}, DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT},
		{Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT,
			Policies: []*api.Policy{{Name: importPolicyName}}, DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT},
	}
}

func communityStrings(cs []uint32) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%d:%d", c>>16, c&0xffff)
	}
	return out
}

func largeStrings(ls [][3]uint32) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = fmt.Sprintf("%d:%d:%d", l[0], l[1], l[2])
	}
	return out
}

// deliveryKey is a canonical text form of a delivery, for grouping. It
// is built without fmt: a whole Apply keys every prefix (10,000 and more).
func deliveryKey(d delivery) string {
	addrs := make([]netip.Addr, 0, len(d))
	for a := range d {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	var b []byte
	for _, a := range addrs {
		b = a.AppendTo(b)
		b = append(b, '{')
		b = appendAttrsKey(b, d[a])
		b = append(b, "};"...)
	}
	return string(b)
}

func attrsKey(a attrs) string { return string(appendAttrsKey(nil, a)) }

// appendAttrsKey appends "c=[1 2] l=[[1 2 3]] lp=- [lb=AS:bw ]nh=<address>" (the
// form fmt's %v gives the slices; "invalid IP" for no next hop).
func appendAttrsKey(b []byte, a attrs) []byte {
	b = append(b, "c=["...)
	for i, c := range a.communities {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	b = append(b, "] l=["...)
	for i, l := range a.large {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, '[')
		for j, v := range l {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendUint(b, uint64(v), 10)
		}
		b = append(b, ']')
	}
	b = append(b, "] lp="...)
	if a.hasLocalPref {
		b = strconv.AppendUint(b, uint64(a.localPref), 10)
	} else {
		b = append(b, '-')
	}
	if a.linkBW > 0 {
		b = append(b, " lb="...)
		b = strconv.AppendUint(b, uint64(a.linkAS), 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(a.linkBW), 10)
	}
	b = append(b, " nh="...)
	if a.nextHopSelf {
		return append(b, "self"...)
	}
	if a.nextHop.IsValid() {
		return a.nextHop.AppendTo(b)
	}
	return append(b, "invalid IP"...)
}

func famTag(f Family) string {
	if f == IPv6Unicast {
		return "v6"
	}
	return "v4"
}
