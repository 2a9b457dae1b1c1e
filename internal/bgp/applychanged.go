package bgp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v4/api"
)

// PathChange replaces the desired paths of some prefixes.
type PathChange struct {
	// Prefixes are the prefixes whose paths changed; a prefix of Paths
	// counts as named.
	Prefixes []netip.Prefix
	// Paths are all the desired paths of those prefixes. A prefix with
	// none is no longer announced.
	Paths []Path
}

// lastApply is what the last Apply was given besides its paths.
type lastApply struct {
	sessions       []Session // configured, by name
	nodeV4, nodeV6 netip.Addr
	gshut          gshutScope // of Desired.GracefulShutdown (a drain) or a stop
}

// ApplyPaths changes the paths of the named prefixes and nothing else, as
// Apply would with the last Desired whose paths of those prefixes are
// replaced (the same sessions, the same node addresses; none before any
// Apply). Its work is proportional to the change, not to the paths held:
// the prefixes move between the export policy's prefix sets one by one
// (GoBGP edits a set in place, and the statements that name it see the
// edit), unless a prefix needs a delivery the policy has no set for,
// which installs the policy again as Apply does. When it has nothing to
// build on (the last Apply or ApplyPaths was refused in part, or the
// server stopped since), everything changed: it applies that whole
// Desired.
func (s *Speaker) ApplyPaths(ctx context.Context, c PathChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("bgp speaker is shut down")
	}
	changed := changedPrefixes(c)
	s.want.change(c, changed)
	if !s.pathsOnly {
		return s.apply(ctx, s.want.desired())
	}
	s.pathsOnly = false // until this change has taken
	plan := planPaths(c.Paths, s.last.sessions, s.last.nodeV4, s.last.nodeV6)
	plan.gracefulShutdown(s.last.sessions, s.last.gshut)
	if s.warns.forget(changed) || !plan.warnings.empty() {
		s.warns.merge(plan.warnings)
		s.status.setWarnings(s.warns)
	}
	errs := plan.errs
	if s.srv != nil {
		errs = append(errs, s.changePaths(ctx, changed, plan, false)...)
	}
	s.pathsOnly = len(errs) == 0
	return errors.Join(errs...)
}

// changedPrefixes are the prefixes c names and those of its paths,
// normalised as planPaths normalises them, sorted.
func changedPrefixes(c PathChange) []netip.Prefix {
	set := map[netip.Prefix]bool{}
	add := func(p netip.Prefix) {
		if n, ok := normalPrefix(p); ok {
			set[n] = true
		}
	}
	for _, p := range c.Prefixes {
		add(p)
	}
	for _, p := range c.Paths {
		add(p.Prefix)
	}
	return slices.SortedFunc(maps.Keys(set), comparePrefix)
}

// normalPrefix is the form of a prefix in the RIB: masked, IPv4 unmapped.
func normalPrefix(p netip.Prefix) (netip.Prefix, bool) {
	p = p.Masked()
	if !p.IsValid() {
		return p, false
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()).Masked(), true
}

// changePaths brings the changed prefixes to plan: withdraw, edit the
// policy, announce, refresh. The policy's prefix sets are edited in
// place, unless a prefix needs a set the policy does not have or every
// prefix changed (whole: plan is the whole desired state), which installs
// the policy again.
func (s *Speaker) changePaths(ctx context.Context, changed []netip.Prefix, plan pathPlan, whole bool) []error {
	var errs []error
	s.holdWeights(plan, changed)
	diff, edits, rebuild := s.diffChanged(changed, plan, whole)
	if err := s.withdraw(diff.withdraw); err != nil {
		errs = append(errs, err)
	}
	switch {
	case whole:
		if err := s.installPolicy(ctx, plan.deliveries); err != nil {
			return append(errs, err) // announcing now would go out under the old policy
		}
	case rebuild:
		next := maps.Clone(s.deliveries)
		setDeliveries(next, changed, plan.deliveries)
		if err := s.installPolicy(ctx, next); err != nil {
			return append(errs, err)
		}
	default:
		if err := s.srv.editPrefixSets(ctx, edits); err != nil {
			return append(errs, err)
		}
		setDeliveries(s.deliveries, changed, plan.deliveries)
	}
	errs = append(errs, s.announce(diff.announce, plan.rib)...)
	errs = append(errs, s.refresh(ctx, diff.refresh)...)
	s.logApplied(diff)
	return errs
}

// diffChanged is what changes for the changed prefixes: the paths to
// withdraw and announce, the peers to refresh, and (unless whole, which
// installs the policy anew) the prefix-set edits that bring the policy to
// the new deliveries; rebuild when one needs a set the policy does not
// have.
func (s *Speaker) diffChanged(changed []netip.Prefix, plan pathPlan, whole bool) (pathDiff, prefixSetEdits, bool) {
	var d pathDiff
	refresh := map[netip.Addr]bool{}
	edits := prefixSetEdits{}
	rebuild := false
	for _, p := range changed {
		oldNH, inOld := s.rib[p]
		newNH, inNew := plan.rib[p]
		switch {
		case inNew && (!inOld || oldNH != newNH):
			d.announce = append(d.announce, p)
		case inOld && !inNew:
			d.withdraw = append(d.withdraw, p)
		}
		if inOld && inNew {
			markChanged(refresh, s.deliveries[p], plan.deliveries[p])
		}
		if !whole {
			rebuild = s.editSets(edits, p, plan) || rebuild
		}
	}
	d.refresh = slices.SortedFunc(maps.Keys(refresh), netip.Addr.Compare)
	return d, edits, rebuild
}

// editSets adds the edits that move p to the prefix set of its new
// delivery; true when the policy has no such set.
func (s *Speaker) editSets(edits prefixSetEdits, p netip.Prefix, plan pathPlan) (missing bool) {
	oldKey, newKey := keyOf(s.deliveries, p), keyOf(plan.deliveries, p)
	if oldKey == newKey {
		return false
	}
	fam := familyOf(p)
	if oldKey != "" {
		if set, ok := s.layout.prefixSetFor(oldKey, fam); ok {
			edits.remove(set, p)
		}
	}
	if newKey == "" {
		return false
	}
	set, ok := s.layout.prefixSetFor(newKey, fam)
	edits.add(set, p)
	return !ok
}

// keyOf is the delivery key of a prefix, "" when it has no delivery.
func keyOf(deliveries map[netip.Prefix]delivery, p netip.Prefix) string {
	d, ok := deliveries[p]
	if !ok {
		return ""
	}
	return deliveryKey(d)
}

// setDeliveries makes the changed prefixes' entries in m those of plan.
func setDeliveries(m map[netip.Prefix]delivery, changed []netip.Prefix, plan map[netip.Prefix]delivery) {
	for _, p := range changed {
		if d, ok := plan[p]; ok {
			m[p] = d
		} else {
			delete(m, p)
		}
	}
}

// prefixSetEdits are the prefixes to take out of and put into each prefix
// set, by set name.
type prefixSetEdits map[string]*prefixSetEdit

type prefixSetEdit struct{ remove, add []netip.Prefix }

func (e prefixSetEdits) edit(set string) *prefixSetEdit {
	if e[set] == nil {
		e[set] = &prefixSetEdit{}
	}
	return e[set]
}

func (e prefixSetEdits) remove(set string, p netip.Prefix) {
	e.edit(set).remove = append(e.edit(set).remove, p)
}
func (e prefixSetEdits) add(set string, p netip.Prefix) { e.edit(set).add = append(e.edit(set).add, p) }

// editPrefixSets puts prefixes into their new sets, then takes them out of
// their old ones: in between a moving prefix matches the statements of
// both, so a route exported then (to a peer coming up, say) goes out with
// the old or the new attributes, never not at all, and the caller
// refreshes the peers whose attributes changed. The installed policy no
// longer is g.policy, so the next setPolicies installs its request
// whatever it is.
func (g *gobgp) editPrefixSets(ctx context.Context, edits prefixSetEdits) error {
	if len(edits) == 0 {
		return nil
	}
	g.policy = nil
	names := slices.Sorted(maps.Keys(edits))
	for _, name := range names {
		if add := edits[name].add; len(add) > 0 {
			err := g.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: apiPrefixSet(name, add)})
			if err != nil {
				return fmt.Errorf("put %d prefixes into %s: %w", len(add), name, err)
			}
		}
	}
	for _, name := range names {
		if rm := edits[name].remove; len(rm) > 0 {
			err := g.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: apiPrefixSet(name, rm)})
			if err != nil {
				return fmt.Errorf("take %d prefixes out of %s: %w", len(rm), name, err)
			}
		}
	}
	return nil
}

func apiPrefixSet(name string, prefixes []netip.Prefix) *api.DefinedSet {
	set := &api.DefinedSet{DefinedType: api.DefinedType_DEFINED_TYPE_PREFIX, Name: name}
	for _, p := range prefixes {
		set.Prefixes = append(set.Prefixes, apiPrefix(p))
	}
	return set
}
