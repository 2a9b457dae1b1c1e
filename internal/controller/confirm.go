package controller

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
)

// confirmedCondition is herald.dev/Announced from what the speakers
// report, not from what the controller expects: True only when, for
// every address some node should announce, a node that should announce
// it and whose speaker is alive reports it in its SpeakerStatus (L2: the
// owner answers it; BGP: one of the nodes that may advertise it sent it
// on an established session), naming those nodes. A report from a node
// that should no longer announce (excluded, withdrawn, its next status
// write not yet made) confirms nothing. Otherwise:
//   - the reasons of internal/announce when no node may announce it
//     (NoAdvertisementMatches, NoReadyEndpoint, NoEligibleNode), except
//     that nodes which may announce but whose speakers are down give
//     OwnerSpeakerDown (False);
//   - OwnerSpeakerDown (False) when an address is reported by nobody and
//     the node Kubernetes' view picks for it has no live speaker;
//   - NotConfirmed (Unknown) when the expected node has not reported the
//     address yet.
//
// It returns the nodes the condition depends on (their speakers' liveness
// changing requeues the Service).
func (c *Controller) confirmedCondition(state announce.State, key string, ips []netip.Addr) (condition, []string) {
	state.Live = c.speakerAlive
	st := announce.StatusOf(state, key)
	all := state
	all.Live = nil // Kubernetes' view: every eligible node's speaker up
	if !st.Announced {
		if st.Reason == announce.ReasonNoEligibleNode {
			if k := announce.StatusOf(all, key); k.Announced {
				down := nodesOf(k)
				return condition{Type: v1beta1.ConditionAnnounced, Reason: v1beta1.ReasonOwnerSpeakerDown,
					Message: fmt.Sprintf("no node with a live speaker may announce the Service: %s may, but %s no live speaker (liveness Lease %s<node> expired or missing; check the speaker Pods)",
						strings.Join(down, ", "), hasHave(len(down)), v1beta1.SpeakerLeasePrefix)}, down
			}
		}
		return condition{Type: v1beta1.ConditionAnnounced, Reason: st.Reason, Message: st.Message}, nil
	}
	deps := nodesOf(st)
	var confirmed, waiting []string
	var unconfirmedL2 []netip.Addr
	for _, ip := range ips {
		owner, ok := st.L2[ip]
		if !ok {
			continue
		}
		reps := c.reporters("l2/" + ip.String())
		deps = append(deps, reps...)
		others := slices.DeleteFunc(slices.Clone(reps), func(n string) bool { return n == owner })
		switch {
		case len(others) == len(reps):
			// The node that should answer has not said so. Another
			// node's report is either a hand-over still in progress or
			// a report its next write withdraws: not a confirmation.
			unconfirmedL2 = append(unconfirmedL2, ip)
			still := ""
			if len(others) > 0 {
				still = " (still reported by " + strings.Join(others, ", ") + ")"
			}
			waiting = append(waiting, fmt.Sprintf("%s: node %s should answer it (L2) and has not reported it yet%s", ip, owner, still))
		case len(others) == 0:
			confirmed = append(confirmed, fmt.Sprintf("%s answered by node %s (L2)", ip, owner))
		default:
			confirmed = append(confirmed, fmt.Sprintf("%s answered by node %s (L2; also still reported by %s)", ip, owner, strings.Join(others, ", ")))
		}
	}
	var down []string
	if len(st.BGPNodes) > 0 {
		var reps []string
		for _, ip := range ips {
			for _, p := range bgpPrefixes(state, ip) {
				reps = append(reps, c.reporters("bgp/"+p.String())...)
			}
		}
		reps = slices.DeleteFunc(reps, func(n string) bool { return !slices.Contains(st.BGPNodes, n) })
		slices.Sort(reps)
		reps = slices.Compact(reps)
		deps = append(deps, reps...)
		if len(reps) > 0 {
			confirmed = append(confirmed, "advertised over BGP by "+strings.Join(reps, ", "))
		} else {
			waiting = append(waiting, fmt.Sprintf("no node reports advertising it over BGP yet (expected: %s; check the BGPPeers' sessions)", strings.Join(st.BGPNodes, ", ")))
			for _, n := range st.BGPNodes {
				if !c.speakerAlive(n) {
					down = append(down, n)
				}
			}
		}
	}
	slices.Sort(deps)
	deps = slices.Compact(deps)
	if len(waiting) == 0 {
		return condition{Type: v1beta1.ConditionAnnounced, Status: true, Reason: announce.ReasonAnnounced, Message: strings.Join(confirmed, "; ")}, deps
	}
	if len(unconfirmedL2) > 0 {
		k := announce.StatusOf(all, key)
		for _, ip := range unconfirmedL2 {
			if o := k.L2[ip]; o != "" && o != st.L2[ip] && !c.speakerAlive(o) {
				down = append(down, o)
			}
		}
	}
	msg := strings.Join(append(waiting, confirmed...), "; ")
	if len(down) > 0 {
		slices.Sort(down)
		down = slices.Compact(down)
		deps = slices.Compact(slices.Sorted(slices.Values(append(deps, down...))))
		return condition{Type: v1beta1.ConditionAnnounced, Reason: v1beta1.ReasonOwnerSpeakerDown,
			Message: fmt.Sprintf("node %s %s no live speaker (liveness Lease %s<node> expired or missing); %s", strings.Join(down, ", "), hasHave(len(down)), v1beta1.SpeakerLeasePrefix, msg)}, deps
	}
	return condition{Type: v1beta1.ConditionAnnounced, Unknown: true, Reason: v1beta1.ReasonNotConfirmed, Message: msg}, deps
}

// nodesOf are the nodes a status expects to announce, sorted.
func nodesOf(st announce.ServiceStatus) []string {
	out := slices.Clone(st.BGPNodes)
	for _, n := range st.L2 {
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bgpPrefixes are the prefixes an address may be advertised in: one per
// aggregation length the BGPAdvertisements use for its family.
func bgpPrefixes(state announce.State, ip netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, ad := range state.Config.BGPAdvertisements {
		bits := ad.AggregationLength
		if ip.Is6() {
			bits = ad.AggregationLengthV6
		}
		if p, err := ip.Prefix(bits); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
