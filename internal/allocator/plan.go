package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// plan is a validated service.Request: the family sets that would satisfy it, in
// order of preference, and its requested addresses in family order.
type plan struct {
	// choices are the family sets to try, best first: one set for
	// SingleStack and RequireDualStack, two for dual-stack
	// PreferDualStack (both families, then the primary alone).
	choices [][]corev1.IPFamily
	// requested are the requested addresses, primary family first,
	// ascending within a family.
	requested []netip.Addr
	// count is how many addresses of each family the request needs.
	count int
}

// makePlan checks a request and works out what satisfies it.
func makePlan(req *service.Request) (plan, error) {
	if req.Key == "" {
		return plan{}, fail(InvalidRequest, "the request has no Service key")
	}
	if err := checkFamilies(req); err != nil {
		return plan{}, err
	}
	count, err := checkCount(req)
	if err != nil {
		return plan{}, err
	}
	requested, err := checkRequested(req, count)
	if err != nil {
		return plan{}, err
	}
	if len(requested) > 0 {
		return plan{choices: [][]corev1.IPFamily{familySet(requested)}, requested: requested, count: count}, nil
	}
	fams := req.Families
	switch {
	case policyOf(req) == corev1.IPFamilyPolicySingleStack:
		return plan{choices: [][]corev1.IPFamily{fams[:1]}, count: count}, nil
	case policyOf(req) == corev1.IPFamilyPolicyRequireDualStack || len(fams) == 1:
		return plan{choices: [][]corev1.IPFamily{fams}, count: count}, nil
	default: // PreferDualStack with two families
		return plan{choices: [][]corev1.IPFamily{fams, fams[:1]}, count: count}, nil
	}
}

// countOf is how many addresses of each family req asks for.
func countOf(req *service.Request) int {
	return max(req.AddressCount, 1)
}

// checkCount checks the request's address count (service.AddressCount
// already refuses what the annotation cannot say; this guards callers
// that build requests by hand).
func checkCount(req *service.Request) (int, error) {
	if req.AddressCount < 0 || req.AddressCount > service.MaxAddressCount {
		return 0, fail(InvalidRequest, fmt.Sprintf("Service %s asks for %d addresses per family; %s allows 1 to %d",
			req.Key, req.AddressCount, v1beta1.AnnotationAddressCount, service.MaxAddressCount))
	}
	return countOf(req), nil
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
// and the address count (count of each family they list) and returns
// them in family order, ascending within a family.
func checkRequested(req *service.Request, count int) ([]netip.Addr, error) {
	requested, err := checkAddrs(req, req.RequestedIPs)
	if err != nil {
		return nil, err
	}
	for _, f := range familySet(requested) {
		got := ofFamily(requested, f)
		switch {
		case len(got) == count:
		case count == 1:
			return nil, fail(InvalidRequest, fmt.Sprintf("Service %s requests %d %s addresses (%s); one per family unless %s asks for %d",
				req.Key, len(got), f, ipList(got), v1beta1.AnnotationAddressCount, len(got)))
		default:
			return nil, fail(InvalidRequest, fmt.Sprintf("Service %s asks for %d addresses per family (%s) but requests %s (%s); request %d of each family or none",
				req.Key, count, v1beta1.AnnotationAddressCount, addressWords(len(got), f), ipList(got), count))
		}
	}
	if len(requested) > 0 && len(familySet(requested)) == 1 && policyOf(req) == corev1.IPFamilyPolicyRequireDualStack {
		return nil, fail(InvalidRequest, fmt.Sprintf("Service %s is RequireDualStack but requests only %s; request addresses of each family or none",
			req.Key, ipList(requested)))
	}
	return requested, nil
}

// checkAddrs checks addresses a Service requests or holds: valid, of its
// families, none twice. It returns them in family order.
func checkAddrs(req *service.Request, ips []netip.Addr) ([]netip.Addr, error) {
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		if err := checkRequestedIP(req, ip); err != nil {
			return nil, err
		}
		if seen[ip] {
			return nil, fail(InvalidRequest, fmt.Sprintf("Service %s lists %s twice", req.Key, ip))
		}
		seen[ip] = true
	}
	return orderByFamilies(ips, req.Families), nil
}

// addressWords is "1 IPv4 address" or "3 IPv4 addresses".
func addressWords(n int, f corev1.IPFamily) string {
	if n == 1 {
		return fmt.Sprintf("1 %s address", f)
	}
	return fmt.Sprintf("%d %s addresses", n, f)
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
