package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// plan is a validated service.Request: the family sets that would satisfy it, in
// order of preference, and its requested addresses in family order.
type plan struct {
	// choices are the family sets to try, best first: one set for
	// SingleStack and RequireDualStack, two for dual-stack
	// PreferDualStack (both families, then the primary alone).
	choices [][]corev1.IPFamily
	// requested are the requested addresses, primary family first.
	requested []netip.Addr
}

// makePlan checks a request and works out what satisfies it.
func makePlan(req *service.Request) (plan, error) {
	if req.Key == "" {
		return plan{}, fail(InvalidRequest, "the request has no Service key")
	}
	if err := checkFamilies(req); err != nil {
		return plan{}, err
	}
	requested, err := checkRequested(req)
	if err != nil {
		return plan{}, err
	}
	if len(requested) > 0 {
		return plan{choices: [][]corev1.IPFamily{familiesOf(requested)}, requested: requested}, nil
	}
	fams := req.Families
	switch {
	case policyOf(req) == corev1.IPFamilyPolicySingleStack:
		return plan{choices: [][]corev1.IPFamily{fams[:1]}}, nil
	case policyOf(req) == corev1.IPFamilyPolicyRequireDualStack || len(fams) == 1:
		return plan{choices: [][]corev1.IPFamily{fams}}, nil
	default: // PreferDualStack with two families
		return plan{choices: [][]corev1.IPFamily{fams, fams[:1]}}, nil
	}
}

func policyOf(req *service.Request) corev1.IPFamilyPolicy {
	if req.FamilyPolicy == "" {
		return corev1.IPFamilyPolicySingleStack
	}
	return req.FamilyPolicy
}

func checkFamilies(req *service.Request) error {
	fams := req.Families
	if len(fams) == 0 || len(fams) > 2 {
		return fail(InvalidRequest, fmt.Sprintf("Service %s: spec.ipFamilies must list one or two families, not %d", req.Key, len(fams)))
	}
	for _, f := range fams {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			return fail(InvalidRequest, fmt.Sprintf("Service %s: unknown IP family %q", req.Key, f))
		}
	}
	if len(fams) == 2 && fams[0] == fams[1] {
		return fail(InvalidRequest, fmt.Sprintf("Service %s: spec.ipFamilies lists %s twice", req.Key, fams[0]))
	}
	switch policyOf(req) {
	case corev1.IPFamilyPolicySingleStack:
		if len(fams) != 1 {
			return fail(InvalidRequest, fmt.Sprintf("Service %s: SingleStack with two IP families", req.Key))
		}
	case corev1.IPFamilyPolicyRequireDualStack:
		if len(fams) != 2 {
			return fail(InvalidRequest, fmt.Sprintf("Service %s: RequireDualStack with only %s", req.Key, fams[0]))
		}
	case corev1.IPFamilyPolicyPreferDualStack:
	default:
		return fail(InvalidRequest, fmt.Sprintf("Service %s: unknown ipFamilyPolicy %q", req.Key, req.FamilyPolicy))
	}
	return nil
}

// checkRequested validates the requested addresses against the families
// and returns them in family order.
func checkRequested(req *service.Request) ([]netip.Addr, error) {
	seen := map[corev1.IPFamily]netip.Addr{}
	for _, ip := range req.RequestedIPs {
		if err := checkRequestedIP(req, ip); err != nil {
			return nil, err
		}
		f := familyOf(ip)
		if prev, ok := seen[f]; ok {
			return nil, fail(InvalidRequest, fmt.Sprintf("Service %s requests two %s addresses, %s and %s; at most one per family",
				req.Key, f, prev, ip))
		}
		seen[f] = ip
	}
	requested := orderByFamilies(req.RequestedIPs, req.Families)
	if len(requested) == 1 && policyOf(req) == corev1.IPFamilyPolicyRequireDualStack {
		return nil, fail(InvalidRequest, fmt.Sprintf("Service %s is RequireDualStack but requests only %s; request one address of each family or none",
			req.Key, requested[0]))
	}
	return requested, nil
}

func checkRequestedIP(req *service.Request, ip netip.Addr) error {
	switch {
	case !ip.IsValid():
		return fail(InvalidRequest, fmt.Sprintf("Service %s requests an invalid address", req.Key))
	case ip.Zone() != "":
		return fail(InvalidRequest, fmt.Sprintf("Service %s requests %s, which has a zone", req.Key, ip))
	case ip.Is4In6():
		return fail(InvalidRequest, fmt.Sprintf("Service %s requests the IPv4-mapped address %s; write %s", req.Key, ip, ip.Unmap()))
	case !slices.Contains(req.Families, familyOf(ip)):
		return fail(InvalidRequest, fmt.Sprintf("Service %s requests %s, but its ipFamilies are %v", req.Key, ip, req.Families))
	}
	return nil
}
