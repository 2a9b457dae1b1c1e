package allocator

import (
	"fmt"
	"slices"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/service"
)

// compatible reports whether two Services may hold one address together
// and, when they may not, why (in words for the Service's events): both
// carry the same non-empty sharing key, ask for the same number of
// addresses per family, no protocol and port is used by both, and both or
// neither use externalTrafficPolicy Local. Local
// Services with different selectors may share: the speakers announce
// such an address from the nodes with local endpoints of every one
// (announce.SharedLocalNodes).
func compatible(a, b *holder) (bool, string) {
	switch {
	case a.sharingKey == "" || b.sharingKey == "":
		return false, "sharing needs the herald.dev/allow-shared-ip annotation on both Services"
	case a.sharingKey != b.sharingKey:
		return false, fmt.Sprintf("their sharing keys differ (%q and %q)", a.sharingKey, b.sharingKey)
	case a.count != b.count:
		return false, fmt.Sprintf("they ask for different numbers of addresses per family (%d and %d, %s); Services sharing addresses share all of them",
			a.count, b.count, v1beta1.AnnotationAddressCount)
	}
	if p, clash := commonPort(a.ports, b.ports); clash {
		return false, fmt.Sprintf("both use %s/%d", p.Protocol, p.Port)
	}
	if a.etpLocal != b.etpLocal {
		return false, "only one of them has externalTrafficPolicy Local"
	}
	return true, ""
}

// commonPort returns a port both sorted, normalized lists hold.
func commonPort(a, b []service.Port) (service.Port, bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := comparePorts(a[i], b[j]); {
		case c == 0:
			return a[i], true
		case c < 0:
			i++
		default:
			j++
		}
	}
	return service.Port{}, false
}

// joinable reports whether h may become one more holder of ha. If not, it
// returns the first holder in the way and why.
func joinable(ha *heldAddr, h *holder) (bool, *holder, string) {
	for _, o := range ha.holders {
		if o.key == h.key {
			continue
		}
		if ok, why := compatible(o, h); !ok {
			return false, o, why
		}
	}
	return true, nil, ""
}

// AllNamespaces in Pool.ShareAcrossNamespaces lets every namespace share.
const AllNamespaces = "*"

// sharesAcross reports whether the pool lets Services of namespaces x and
// y hold one address (always when x == y).
func (p *poolState) sharesAcross(x, y string) bool {
	if x == y {
		return true
	}
	if p == nil {
		return false
	}
	list := p.ShareAcrossNamespaces
	return slices.Contains(list, AllNamespaces) || slices.Contains(list, x) && slices.Contains(list, y)
}

// mayJoin reports whether h may become one more holder of ha: a Service
// of another namespace holds it only with the pool's consent, and every
// holder must be compatible. If not, it returns the holder in the way
// and why, in words that name a Service of another namespace by nothing
// but that (the event goes to h's owner).
func (a *Allocator) mayJoin(ha *heldAddr, h *holder) (bool, *holder, string) {
	p := a.pools.byName[ha.pool]
	for _, o := range ha.holders {
		if o.key != h.key && !p.sharesAcross(o.namespace, h.namespace) {
			return false, o, fmt.Sprintf("%s does not let namespace %s share across namespaces (spec.sharing.acrossNamespaces)",
				poolWords(ha.pool), h.namespace)
		}
	}
	return joinable(ha, h)
}

// holderWords names o in a message for h's owner: by name in h's own
// namespace, else only as being in another namespace.
func holderWords(o, h *holder) string {
	if o.namespace == h.namespace {
		return "Service " + o.key
	}
	return "a Service in another namespace"
}
