package announced

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
)

// Input is what Confirm decides from.
type Input struct {
	// State is the announcing state with the Service among its Services
	// (its addresses those being written); its Live is ignored.
	State announce.State
	Key   string       // the Service's namespace/name
	IPs   []netip.Addr // its addresses, at least one
	// Live reports whether a node's speaker Lease is fresh.
	Live func(node string) bool
	// Reports are the nodes whose live speakers report each report key
	// (L2Key, BGPKey), the most recent claim first.
	Reports map[string][]string
}

// Condition is herald.dev/Announced as Confirm decides it, with the nodes
// it was computed from (their speakers' liveness changing may change it).
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Deps    []string // sorted
}

// L2Key is the report key of an address a speaker answers for.
func L2Key(ip netip.Addr) string { return "l2/" + ip.String() }

// BGPKey is the report key of a prefix a speaker sends on some
// established session.
func BGPKey(p netip.Prefix) string { return "bgp/" + p.String() }

// Confirm is herald.dev/Announced from what the speakers report, not from
// what the controller expects: True only when, for every address some
// node should announce, a node that should announce it and whose speaker
// is alive reports it (L2: the owner answers it; BGP: one of the nodes
// that may advertise it sent it on an established session), naming those
// nodes (reason SharedLocalIncomplete, naming what is missing, when the
// address is shared by Local Services no node serves in full). A report
// from a node that should no longer announce (excluded, withdrawn, its
// next status write not yet made) confirms nothing.
// Otherwise:
//   - the reasons of internal/announce when no node may announce it
//     (NoAdvertisementMatches, NoReadyEndpoint, NoEligibleNode), except
//     that nodes which may announce but whose speakers are down give
//     OwnerSpeakerDown (False);
//   - OwnerSpeakerDown (False) when an address is reported by nobody and
//     the node Kubernetes' view picks for it has no live speaker;
//   - NotConfirmed (Unknown) when the expected node has not reported the
//     address yet.
func Confirm(in Input) Condition {
	state := in.State
	state.Live = in.Live
	st := announce.StatusOf(state, in.Key)
	all := state
	all.Live = nil // Kubernetes' view: every eligible node's speaker up
	if !st.Announced {
		return notAnnounced(all, in.Key, st)
	}
	r := confirmation{deps: nodesOf(st)}
	r.l2(in, st)
	r.bgp(in, st)
	if len(r.waiting) == 0 {
		if st.Gap != "" {
			return Condition{Status: metav1.ConditionTrue, Reason: announce.ReasonSharedLocalIncomplete,
				Message: strings.Join(append(r.confirmed, st.Gap), "; "), Deps: sorted(r.deps)}
		}
		return Condition{Status: metav1.ConditionTrue, Reason: announce.ReasonAnnounced, Message: strings.Join(r.confirmed, "; "), Deps: sorted(r.deps)}
	}
	if len(r.unconfirmedL2) > 0 {
		k := announce.StatusOf(all, in.Key)
		for _, ip := range r.unconfirmedL2 {
			if o := k.L2[ip]; o != "" && o != st.L2[ip] && !in.Live(o) {
				r.down = append(r.down, o)
			}
		}
	}
	msg := strings.Join(append(r.waiting, r.confirmed...), "; ")
	if len(r.down) > 0 {
		down := sorted(r.down)
		return Condition{Status: metav1.ConditionFalse, Reason: v1beta1.ReasonOwnerSpeakerDown,
			Message: fmt.Sprintf("node %s %s no live speaker (liveness Lease %s<node> expired or missing); %s", strings.Join(down, ", "), hasHave(len(down)), v1beta1.SpeakerLeasePrefix, msg),
			Deps:    sorted(append(r.deps, down...))}
	}
	return Condition{Status: metav1.ConditionUnknown, Reason: v1beta1.ReasonNotConfirmed, Message: msg, Deps: sorted(r.deps)}
}

// notAnnounced is the condition when no node with a live speaker may
// announce the Service: OwnerSpeakerDown when Kubernetes' view (all)
// has nodes that may, the reason of internal/announce otherwise.
func notAnnounced(all announce.State, key string, st announce.ServiceStatus) Condition {
	if st.Reason == announce.ReasonNoEligibleNode {
		if k := announce.StatusOf(all, key); k.Announced {
			down := nodesOf(k)
			return Condition{Status: metav1.ConditionFalse, Reason: v1beta1.ReasonOwnerSpeakerDown,
				Message: fmt.Sprintf("no node with a live speaker may announce the Service: %s may, but %s no live speaker (liveness Lease %s<node> expired or missing; check the speaker Pods)",
					strings.Join(down, ", "), hasHave(len(down)), v1beta1.SpeakerLeasePrefix),
				Deps: down}
		}
	}
	return Condition{Status: metav1.ConditionFalse, Reason: st.Reason, Message: st.Message}
}

// confirmation gathers, address by address, what confirms the Service's
// announcement and what it still waits for.
type confirmation struct {
	deps, down         []string
	confirmed, waiting []string
	unconfirmedL2      []netip.Addr
}

// l2 checks that each address's L2 owner reports it.
func (r *confirmation) l2(in Input, st announce.ServiceStatus) {
	for _, ip := range in.IPs {
		owner, ok := st.L2[ip]
		if !ok {
			continue
		}
		reps := in.Reports[L2Key(ip)]
		r.deps = append(r.deps, reps...)
		others := slices.DeleteFunc(slices.Clone(reps), func(n string) bool { return n == owner })
		switch {
		case len(others) == len(reps):
			// The node that should answer has not said so. Another
			// node's report is either a change of owner in progress or
			// a report its next write withdraws: not a confirmation.
			r.unconfirmedL2 = append(r.unconfirmedL2, ip)
			still := ""
			if len(others) > 0 {
				still = " (still reported by " + strings.Join(others, ", ") + ")"
			}
			r.waiting = append(r.waiting, fmt.Sprintf("%s: node %s should answer it (L2) and has not reported it yet%s", ip, owner, still))
		case len(others) == 0:
			r.confirmed = append(r.confirmed, fmt.Sprintf("%s answered by node %s (L2)", ip, owner))
		default:
			r.confirmed = append(r.confirmed, fmt.Sprintf("%s answered by node %s (L2; also still reported by %s)", ip, owner, strings.Join(others, ", ")))
		}
	}
}

// bgp checks that some node that may advertise the Service over BGP
// reports one of its prefixes.
func (r *confirmation) bgp(in Input, st announce.ServiceStatus) {
	if len(st.BGPNodes) == 0 {
		return
	}
	var reps []string
	for _, ip := range in.IPs {
		for _, p := range BGPPrefixes(in.State, ip) {
			reps = append(reps, in.Reports[BGPKey(p)]...)
		}
	}
	reps = sorted(slices.DeleteFunc(reps, func(n string) bool { return !slices.Contains(st.BGPNodes, n) }))
	r.deps = append(r.deps, reps...)
	if len(reps) > 0 {
		r.confirmed = append(r.confirmed, "advertised over BGP by "+strings.Join(reps, ", "))
		return
	}
	r.waiting = append(r.waiting, fmt.Sprintf("no node reports advertising it over BGP yet (expected: %s; check the BGPPeers' sessions)", strings.Join(st.BGPNodes, ", ")))
	for _, n := range st.BGPNodes {
		if !in.Live(n) {
			r.down = append(r.down, n)
		}
	}
}

// ReportKeys are the report keys Confirm may read for the addresses:
// each address's L2Key and the BGPKey of each of its BGPPrefixes.
func ReportKeys(state announce.State, ips []netip.Addr) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, L2Key(ip))
		for _, p := range BGPPrefixes(state, ip) {
			out = append(out, BGPKey(p))
		}
	}
	return out
}

// nodesOf are the nodes a status expects to announce, sorted.
func nodesOf(st announce.ServiceStatus) []string {
	out := slices.Clone(st.BGPNodes)
	for _, n := range st.L2 {
		out = append(out, n)
	}
	return sorted(out)
}

// BGPPrefixes are the prefixes an address may be advertised in: one per
// aggregation length the BGPAdvertisements use for its family.
func BGPPrefixes(state announce.State, ip netip.Addr) []netip.Prefix {
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

func sorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
