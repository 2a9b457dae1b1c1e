package layer2

import (
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// Announcement is one VIP this node owns in L2 mode.
type Announcement struct {
	IP netip.Addr
	// Interfaces is the L2Advertisement's interface list; empty means the
	// default choice (see ChooseInterfaces).
	Interfaces []string
}

// Announcer answers ARP and NDP for the VIPs it is told to announce, on the
// interfaces ChooseInterfaces picks, following interface changes while Run
// runs.
type Announcer struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	owned   atomic.Pointer[ownership]
	// start opens a responder; tests replace it to run without sockets.
	start func(ctx context.Context, spec responderSpec) responderHandle

	mu         sync.Mutex
	want       map[netip.Addr][]string // VIP -> override
	assigned   map[netip.Addr][]string // VIP -> interfaces announced on
	net        netState
	responders map[responderKey]*responderEntry
	warned     map[warning]bool // problems already logged
	runCtx     context.Context  // non-nil while Run runs
}

type responderKey struct {
	iface string
	proto string
}

// warning is a problem with announcing a VIP on an interface, logged once.
type warning struct {
	vip   netip.Addr
	iface string
	msg   string
}

type responderEntry struct {
	h     responderHandle
	ident linkIdent
}

// New returns an Announcer. It announces nothing until Run runs and
// SetAnnouncements names VIPs.
func New(cfg Config) (*Announcer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	a := &Announcer{
		cfg:        cfg,
		log:        cfg.Logger,
		metrics:    m,
		start:      startResponder,
		want:       map[netip.Addr][]string{},
		assigned:   map[netip.Addr][]string{},
		responders: map[responderKey]*responderEntry{},
		warned:     map[warning]bool{},
	}
	a.owned.Store(&ownership{})
	return a, nil
}

// SetAnnouncements replaces the set of VIPs this node announces and applies
// the difference at once: a new VIP is answered and advertised (gratuitous
// ARP / unsolicited NA, repeated), a VIP no longer listed is not answered
// any more. Calling it again with the same set does nothing.
func (a *Announcer) SetAnnouncements(want []Announcement) {
	norm := normalize(want)
	a.mu.Lock()
	defer a.mu.Unlock()
	if maps.EqualFunc(a.want, norm, slices.Equal) {
		return
	}
	a.want = norm
	a.reconcileLocked()
}

// Interfaces returns the interfaces ip is currently announced on, sorted:
// those its responders answer on (an NDP responder may still be waiting a
// second or two for the link-local address to pass DAD).
func (a *Announcer) Interfaces(ip netip.Addr) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.assigned[ip.Unmap().WithZone("")])
}

// owns reports, from the current snapshot, whether vip is announced on iface.
func (a *Announcer) owns(iface string, vip netip.Addr) bool {
	return a.owned.Load().owns(iface, vip)
}

// normalize turns announcements into VIP -> sorted override names, merging
// duplicates and dropping invalid addresses.
func normalize(want []Announcement) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, w := range want {
		ip := w.IP.Unmap().WithZone("")
		if !ip.IsValid() {
			continue
		}
		out[ip] = append(out[ip], w.Interfaces...)
	}
	for ip, names := range out {
		out[ip] = sortedUnique(names)
	}
	return out
}
