package allocator

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/herald-lb/herald/internal/service"
)

// holder is one Service's hold on its addresses, with what sharing needs
// to know about it.
type holder struct {
	key       string
	namespace string
	pool      string
	ips       []netip.Addr // primary family first, ascending within a family
	// count is how many addresses of each family the Service asks for
	// (Restore: holds); Services sharing addresses must have the same.
	count      int
	sharingKey string
	ports      []service.Port // normalized
	etpLocal   bool
	selector   map[string]string
	// refused says why the last allocation joined no address held under
	// the sharing key although one was (see Assignment.Refused).
	refused string
	// since dates the hold on these addresses: holders are ordered by it
	// (larger: later), and a later holder that clashes yields.
	since uint64
}

func newHolder(req *service.Request) *holder {
	ns, _, _ := strings.Cut(req.Key, "/")
	return &holder{
		key:        req.Key,
		namespace:  ns,
		count:      countOf(req),
		sharingKey: req.SharingKey,
		ports:      normalizePorts(req.Ports),
		etpLocal:   req.ETPLocal,
		selector:   maps.Clone(req.Selector),
	}
}

// refresh copies what may change without moving an address (ports,
// traffic policy, selector) from a newer holder of the same Service.
func (h *holder) refresh(from *holder) {
	h.ports, h.etpLocal, h.selector = from.ports, from.etpLocal, from.selector
}

func (h *holder) assignment() Assignment {
	return Assignment{Key: h.key, Pool: h.pool, IPs: slices.Clone(h.ips), Refused: h.refused}
}

// heldAddr is one held address: the pool it is attributed to, the sharing
// key all its holders carry ("" when it has one holder that shares
// nothing) and its holders, sorted by key.
type heldAddr struct {
	pool       string
	sharingKey string
	holders    []*holder
}

// book is the address book: which Service holds which address, and which
// addresses are held under each sharing key.
type book struct {
	addrs  map[netip.Addr]*heldAddr
	byKey  map[string]*holder
	shared map[string][]netip.Addr // sharing key -> addresses, sorted
	// yielding are the Services that must leave a shared address: an
	// earlier holder's change made them clash with it (see displace).
	yielding map[string]bool
	taken    taken // held and quarantined addresses
	// quarantined are free addresses not to be handed out (see Quarantine).
	quarantined map[netip.Addr]bool
}

func newBook() *book {
	return &book{
		addrs:  map[netip.Addr]*heldAddr{},
		byKey:  map[string]*holder{},
		shared: map[string][]netip.Addr{},
		taken:  newTaken(),

		yielding: map[string]bool{},

		quarantined: map[netip.Addr]bool{},
	}
}

// held reports whether a is in taken: held by a Service or quarantined.
func (b *book) held(a netip.Addr) bool {
	_, ok := b.addrs[a]
	return ok || b.quarantined[a]
}

// add makes h a holder of a and reports whether a was free before.
func (b *book) add(a netip.Addr, h *holder) bool {
	if ha, ok := b.addrs[a]; ok {
		i, _ := slices.BinarySearchFunc(ha.holders, h.key, holderKeyCmp)
		ha.holders = slices.Insert(ha.holders, i, h)
		return false
	}
	b.addrs[a] = &heldAddr{pool: h.pool, sharingKey: h.sharingKey, holders: []*holder{h}}
	if b.quarantined[a] {
		delete(b.quarantined, a) // already in taken
	} else {
		b.taken.add(a)
	}
	if h.sharingKey != "" {
		list := b.shared[h.sharingKey]
		i, _ := slices.BinarySearchFunc(list, a, netip.Addr.Compare)
		b.shared[h.sharingKey] = slices.Insert(list, i, a)
	}
	return true
}

// drop removes h from the holders of a and reports whether a is free now.
func (b *book) drop(a netip.Addr, h *holder) bool {
	ha, ok := b.addrs[a]
	if !ok {
		return false
	}
	ha.holders = slices.DeleteFunc(ha.holders, func(o *holder) bool { return o == h })
	if len(ha.holders) > 0 {
		return false
	}
	delete(b.addrs, a)
	b.taken.remove(a, b.held)
	if ha.sharingKey != "" {
		list := b.shared[ha.sharingKey]
		if i, found := slices.BinarySearchFunc(list, a, netip.Addr.Compare); found {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(b.shared, ha.sharingKey)
		} else {
			b.shared[ha.sharingKey] = list
		}
	}
	return true
}

func holderKeyCmp(h *holder, key string) int { return strings.Compare(h.key, key) }
