package allocator

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/internal/service"
)

// Assignment is what a Service holds.
type Assignment struct {
	Key string
	// Pool is the pool the addresses are attributed to ("" for a restored
	// assignment no pool contained).
	Pool string
	// IPs are in the Service's family order, primary first.
	IPs []netip.Addr
	// Refused, set when the Service's addresses were chosen, says why it
	// did not join an address held under its sharing key although one
	// exists (held in another namespace without the pool's consent, or a
	// clash); it names no Service of another namespace.
	Refused string
	// Displaced, set when a Service sharing an address keeps it after a
	// change (of ports, or traffic policy) that makes later holders clash
	// with it, lists those later holders: each moves on its next Assign.
	Displaced []string
}

// familyOf returns the Kubernetes IP family of an address.
func familyOf(a netip.Addr) corev1.IPFamily {
	if a.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// familyIndex is 0 for IPv4 and 1 for IPv6, for per-family counters.
func familyIndex(f corev1.IPFamily) int {
	if f == corev1.IPv4Protocol {
		return 0
	}
	return 1
}

// familySet returns the families of ips, each once, in the order they
// first appear.
func familySet(ips []netip.Addr) []corev1.IPFamily {
	var out []corev1.IPFamily
	for _, ip := range ips {
		if f := familyOf(ip); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// ofFamily returns the addresses of ips of family f, in order.
func ofFamily(ips []netip.Addr, f corev1.IPFamily) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if familyOf(ip) == f {
			out = append(out, ip)
		}
	}
	return out
}

// perFamily returns the largest number of addresses ips holds of one
// family: a Service's address count as its addresses tell it.
func perFamily(ips []netip.Addr) int {
	n := 0
	for _, f := range familySet(ips) {
		n = max(n, len(ofFamily(ips, f)))
	}
	return n
}

// evenly reports whether ips holds exactly n addresses of each of its
// families.
func evenly(ips []netip.Addr, n int) bool {
	for _, f := range familySet(ips) {
		if len(ofFamily(ips, f)) != n {
			return false
		}
	}
	return true
}

// orderByFamilies sorts ips into the order of families (primary first),
// ascending within a family: the order of status.loadBalancer.ingress.
func orderByFamilies(ips []netip.Addr, families []corev1.IPFamily) []netip.Addr {
	out := slices.Clone(ips)
	slices.SortStableFunc(out, func(a, b netip.Addr) int {
		if d := slices.Index(families, familyOf(a)) - slices.Index(families, familyOf(b)); d != 0 {
			return d
		}
		return a.Compare(b)
	})
	return out
}

// normalizePorts returns the ports with TCP for an empty protocol, sorted
// and without duplicates.
func normalizePorts(ports []service.Port) []service.Port {
	out := make([]service.Port, 0, len(ports))
	for _, p := range ports {
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		out = append(out, p)
	}
	slices.SortFunc(out, comparePorts)
	return slices.Compact(out)
}

func comparePorts(a, b service.Port) int {
	if a.Protocol != b.Protocol {
		if a.Protocol < b.Protocol {
			return -1
		}
		return 1
	}
	return int(a.Port) - int(b.Port)
}
