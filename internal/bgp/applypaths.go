package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
)

// applyPaths brings GoBGP's RIB and export policy to the desired paths:
// changePaths with every prefix changed, the policy installed anew (the
// sessions, which its statements name, may have changed). A shut-down
// speaker applies only to send its paths with the marking of a stop.
func (s *Speaker) applyPaths(ctx context.Context, d Desired) []error {
	sessions := make([]Session, 0, len(s.configured))
	for _, n := range sortedKeys(s.configured) {
		sessions = append(sessions, s.configured[n])
	}
	gshut := gshutScopeOf(d.GracefulShutdown, s.closed)
	s.last = lastApply{sessions: sessions, nodeV4: d.NodeIPv4, nodeV6: d.NodeIPv6, gshut: gshut}
	plan := planPaths(d.Paths, sessions, d.NodeIPv4, d.NodeIPv6)
	plan.gracefulShutdown(sessions, gshut)
	s.warns = plan.warnings
	s.status.setWarnings(plan.warnings)
	errs := plan.errs
	if s.srv == nil {
		return errs
	}
	return append(errs, s.changePaths(ctx, everyPrefix(s, plan), plan, true)...)
}

// everyPrefix are the prefixes of the paths applied and of plan, sorted:
// the change set of a whole Apply. (A plan delivers only prefixes of its
// RIB; the applied deliveries may hold one whose announcement failed.)
func everyPrefix(s *Speaker, plan pathPlan) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(plan.rib)+len(s.rib))
	for p := range plan.rib {
		out = append(out, p)
	}
	for p := range s.rib {
		if _, dup := plan.rib[p]; !dup {
			out = append(out, p)
		}
	}
	for p := range s.deliveries {
		_, inPlan := plan.rib[p]
		_, inRIB := s.rib[p]
		if !inPlan && !inRIB {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, comparePrefix)
	return out
}

// installPolicy renders the deliveries as the export policy and installs
// it; they are then the ones applied.
func (s *Speaker) installPolicy(ctx context.Context, deliveries map[netip.Prefix]delivery) error {
	req, layout := buildPolicyLayout(deliveries)
	if err := s.srv.setPolicies(ctx, req); err != nil {
		return err
	}
	s.deliveries, s.layout = deliveries, layout
	return nil
}

func (s *Speaker) logApplied(diff pathDiff) {
	if len(diff.withdraw)+len(diff.announce)+len(diff.refresh) > 0 {
		s.log.Info("BGP paths applied", "announced", len(diff.announce), "withdrawn", len(diff.withdraw),
			"refreshedPeers", len(diff.refresh), "total", len(s.rib))
	}
}

// withdraw removes prefixes from the RIB; GoBGP sends the withdrawals at
// once, to every established peer of the family.
func (s *Speaker) withdraw(prefixes []netip.Prefix) error {
	if len(prefixes) == 0 {
		return nil
	}
	paths := make([]*apiutil.Path, 0, len(prefixes))
	for _, p := range prefixes {
		rp, err := ribPath(p, s.rib[p], true)
		if err != nil {
			return err
		}
		paths = append(paths, rp)
		s.log.Debug("BGP path withdrawn", "prefix", p)
	}
	if err := s.srv.srv.DeletePath(apiutil.DeletePathRequest{Paths: paths}); err != nil {
		return fmt.Errorf("withdraw %d paths: %w", len(paths), err)
	}
	for _, p := range prefixes {
		delete(s.rib, p)
	}
	return nil
}

// announce adds or replaces prefixes in the RIB. One batch call; when it
// fails, each path is retried alone so one bad path does not hold back the
// others, and the error names it.
func (s *Speaker) announce(prefixes []netip.Prefix, rib map[netip.Prefix]netip.Addr) []error {
	if len(prefixes) == 0 {
		return nil
	}
	paths := make([]*apiutil.Path, 0, len(prefixes))
	for _, p := range prefixes {
		rp, err := ribPath(p, rib[p], false)
		if err != nil {
			return []error{err}
		}
		paths = append(paths, rp)
	}
	if _, err := s.srv.srv.AddPath(apiutil.AddPathRequest{Paths: paths}); err == nil {
		for _, p := range prefixes {
			s.rib[p] = rib[p]
			s.log.Debug("BGP path announced", "prefix", p, "nextHop", rib[p])
		}
		return nil
	}
	var errs []error
	for i, p := range prefixes {
		if _, err := s.srv.srv.AddPath(apiutil.AddPathRequest{Paths: paths[i : i+1]}); err != nil {
			errs = append(errs, fmt.Errorf("announce path %s: %w", p, err))
			continue
		}
		s.rib[p] = rib[p]
	}
	return errs
}

// refresh re-sends a peer's whole share under the current policy (soft
// reset out): it gets new attributes, and withdrawals for what it lost.
func (s *Speaker) refresh(ctx context.Context, peers []netip.Addr) []error {
	var errs []error
	for _, a := range peers {
		if !s.holds(a) {
			continue
		}
		err := s.srv.srv.ResetPeer(ctx, &api.ResetPeerRequest{
			Address: a.String(), Soft: true, Direction: api.ResetPeerRequest_DIRECTION_OUT,
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("refresh routes sent to %s: %w", a, err))
		}
	}
	return errs
}

func (s *Speaker) holds(a netip.Addr) bool {
	for _, ss := range s.configured {
		if ss.PeerAddress == a {
			return true
		}
	}
	return false
}
