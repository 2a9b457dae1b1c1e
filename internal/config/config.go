package config

import (
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/internal/iprange"
)

// Config is one validated snapshot of Herald's configuration. Treat it as
// read-only: it is shared between goroutines.
type Config struct {
	// Pools by name: valid, non-conflicting pools, including pools being
	// deleted (Deleting), which keep their holders and hand out nothing.
	Pools map[string]*Pool
	// L2Advertisements sorted by name.
	L2Advertisements []*L2Advertisement
	// BGPAdvertisements sorted by name.
	BGPAdvertisements []*BGPAdvertisement
	// Peers sorted by name.
	Peers []*Peer
	// BFDProfiles by name.
	BFDProfiles map[string]*BFDProfile
}

// PoolNames returns the pool names, sorted.
func (c *Config) PoolNames() []string {
	return sortedKeys(c.Pools)
}

// PoolFor returns the pool whose ranges contain addr.
func (c *Config) PoolFor(addr netip.Addr) (*Pool, bool) {
	for _, name := range c.PoolNames() {
		if c.Pools[name].Contains(addr) {
			return c.Pools[name], true
		}
	}
	return nil, false
}

// PoolHolding returns the pool an address handed out by Herald belongs
// to: the pool whose ranges contain addr, else the pool whose status
// records addr as held from it outside its ranges (the controller's
// record; see Pool.Outside). An address in neither is one the controller
// does not hold or has not recorded yet: no pool.
func (c *Config) PoolHolding(addr netip.Addr) (*Pool, bool) {
	if p, ok := c.PoolFor(addr); ok {
		return p, true
	}
	for _, name := range c.PoolNames() {
		if c.Pools[name].HoldsOutside(addr) {
			return c.Pools[name], true
		}
	}
	return nil, false
}

// PoolOfRecord returns the pool of addr for a Service whose annotation
// herald.dev/ip-allocated-from-pool names named: PoolHolding, else (for
// an address no pool contains or records) the named pool, but only when
// that pool's status has no record of its outside addresses at all
// (OutsideUnrecorded: never written, or written by a version without the
// record, as after an upgrade); fallback says that the annotation decided.
// A Service's owner can edit the annotation, so it decides nothing else.
func (c *Config) PoolOfRecord(addr netip.Addr, named string) (p *Pool, fallback bool) {
	if p, ok := c.PoolHolding(addr); ok {
		return p, false
	}
	if np := c.Pools[named]; np != nil && np.OutsideUnrecorded {
		return np, true
	}
	return nil, false
}

// Pool is an IPAddressPool in usable form.
type Pool struct {
	Name          string
	Labels        labels.Set
	Created       time.Time
	Ranges        []iprange.Range // sorted, non-overlapping
	AutoAssign    bool
	AvoidBuggyIPs bool
	// SubnetRouterAnycast are the all-zeros addresses of the IPv6 CIDRs
	// written in spec.addresses (/126 and shorter), which the pool hands
	// out only to a Service requesting them; sorted.
	SubnetRouterAnycast []netip.Addr
	Deleting            bool // deletion requested; the finalizer holds it while in use
	// Outside are the addresses the controller records in the pool's
	// status as held from it outside its ranges
	// (status.addressesOutsideRanges), sorted; unparsable entries are
	// left out.
	Outside []netip.Addr
	// OutsideUnrecorded says the status has no current record of them:
	// never written for this generation, or written by a version without
	// the record (its outsideRanges count disagrees with the list).
	OutsideUnrecorded bool

	Priority   *int32
	Namespaces []string
	// ShareAcrossNamespaces are the namespaces that may share the pool's
	// addresses with each other ("*": every namespace); sorted.
	ShareAcrossNamespaces []string
	NamespaceSelectors    []labels.Selector
	ServiceSelectors      []labels.Selector

	// LocalFallback is spec.sharing.localFallback, SomePorts when unset:
	// which nodes announce an address shared by Services with
	// externalTrafficPolicy: Local while no node serves every one.
	LocalFallback string
}

// Contains reports whether addr is in one of the pool's ranges.
func (p *Pool) Contains(addr netip.Addr) bool {
	for _, r := range p.Ranges {
		if r.Contains(addr) {
			return true
		}
	}
	return false
}

// HoldsOutside reports whether the pool's status records addr as held
// from it outside its ranges.
func (p *Pool) HoldsOutside(addr netip.Addr) bool {
	_, ok := slices.BinarySearchFunc(p.Outside, addr, netip.Addr.Compare)
	return ok
}

// HasFamily reports whether the pool holds addresses of the family.
func (p *Pool) HasFamily(ipv4 bool) bool {
	for _, r := range p.Ranges {
		if r.Is4() == ipv4 {
			return true
		}
	}
	return false
}

// Selection is the part common to both kinds of advertisement: which pools,
// nodes and Services it applies to.
type Selection struct {
	// Pools are the names of the selected pools that exist, sorted.
	Pools            []string
	NodeSelectors    []labels.Selector // empty: every node
	ServiceSelectors []labels.Selector // empty: every Service
}

// SelectsPool reports whether the selection covers the pool.
func (s Selection) SelectsPool(name string) bool {
	for _, p := range s.Pools {
		if p == name {
			return true
		}
	}
	return false
}

// SelectsNode reports whether a node with these labels may announce.
func (s Selection) SelectsNode(nodeLabels labels.Set) bool {
	return anySelects(s.NodeSelectors, nodeLabels)
}

// SelectsService reports whether a Service with these labels is covered.
func (s Selection) SelectsService(serviceLabels labels.Set) bool {
	return anySelects(s.ServiceSelectors, serviceLabels)
}

// anySelects: an empty list selects everything, otherwise one must match.
func anySelects(sels []labels.Selector, set labels.Set) bool {
	if len(sels) == 0 {
		return true
	}
	for _, s := range sels {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// L2Advertisement announces pools with ARP/NDP.
type L2Advertisement struct {
	Name string
	Selection
	Interfaces []string // empty: the default choice
}

// BGPAdvertisement advertises pools to peers.
type BGPAdvertisement struct {
	Name string
	Selection
	// Peers names the peers that receive the routes; nil means every peer,
	// an empty non-nil list means none (every named peer was missing).
	Peers               []string
	AggregationLength   int // IPv4 prefix length of the advertised route
	AggregationLengthV6 int
	LocalPref           *uint32
	Communities         []uint32    // standard communities, sorted, unique
	LargeCommunities    [][3]uint32 // sorted, unique
	// LinkBandwidth weighs the routes of externalTrafficPolicy: Local
	// Services by the node's ready local endpoints (the link-bandwidth
	// extended community).
	LinkBandwidth bool
}

// SelectsPeer reports whether the advertisement's routes go to the peer.
func (a *BGPAdvertisement) SelectsPeer(name string) bool {
	if a.Peers == nil {
		return true
	}
	for _, p := range a.Peers {
		if p == name {
			return true
		}
	}
	return false
}

// Peer is a BGP session the selected nodes open.
type Peer struct {
	Name            string
	MyASN, PeerASN  uint32     // PeerASN 0 with DynamicASN
	DynamicASN      DynamicASN // empty: the router's AS is PeerASN
	Passive         bool       // wait for the router to connect
	VRF             string     // Linux VRF device the session is bound to; empty: the default VRF
	Address         netip.Addr // zero with Interface
	Interface       string     // unnumbered: the node's interface toward the router
	Port            uint16
	SourceAddress   netip.Addr // zero: chosen by the node
	RouterID        netip.Addr // zero: the node's IPv4 address
	HoldTime        time.Duration
	KeepaliveTime   time.Duration
	ConnectTime     time.Duration
	EBGPMultiHop    bool
	Password        string
	GracefulRestart bool
	NodeSelectors   []labels.Selector
	BFD             *BFDProfile // nil: no BFD
	// AddressFamilies the session carries ("IPv4", "IPv6"), sorted;
	// empty: the families of the pools.
	AddressFamilies []string
}

// IsEBGP reports whether the session is external BGP.
func (p *Peer) IsEBGP() bool {
	if p.DynamicASN != "" {
		return p.DynamicASN == DynamicExternal
	}
	return p.MyASN != p.PeerASN
}

// DynamicASN is the class of AS numbers a peer without a fixed peerASN
// accepts from its router.
type DynamicASN string

// The classes of spec.dynamicASN.
const (
	DynamicInternal DynamicASN = "internal" // the router's AS is myASN
	DynamicExternal DynamicASN = "external" // any other AS
)

// SelectsNode reports whether a node with these labels opens the session.
func (p *Peer) SelectsNode(nodeLabels labels.Set) bool {
	return anySelects(p.NodeSelectors, nodeLabels)
}

// BFDProfile holds BFD timers.
type BFDProfile struct {
	Name             string
	ReceiveInterval  time.Duration
	TransmitInterval time.Duration
	DetectMultiplier uint32
}
