package layer2

import (
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-lb/herald/internal/l2owner"
)

// Announcement is one VIP this node owns in L2 mode.
type Announcement struct {
	IP netip.Addr
	// Interfaces is the L2Advertisement's interface list; empty means the
	// default choice (see ChooseInterfaces).
	Interfaces []string
	// Releasing says this node is handing the VIP over to another node
	// (make-before-break): it keeps answering ARP/NS for it but sends no
	// gratuitous packet for it (a burst in progress stops at once), and
	// stops answering on an interface the moment another host announces
	// the VIP there with a gratuitous ARP or an unsolicited NA with the
	// Override flag. Config.OnYield then reports it. A VIP taken over stays
	// silent until SetAnnouncements lists it without Releasing (claimed
	// back: answered and advertised again) or drops it. When the same IP is
	// listed more than once, it is releasing only if every entry says so.
	Releasing bool
}

// Announcer answers ARP and NDP for the VIPs it is told to announce, on the
// interfaces ChooseInterfaces picks, following interface changes while Run
// runs.
type Announcer struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	owned   atomic.Pointer[ownership]
	// speakers: the other speakers' MACs, the only hosts the fence yields
	// to once complete (SetSpeakerMACs); nil: any host.
	speakers atomic.Pointer[speakerMACs]
	// start opens a responder; tests replace it to run without sockets.
	start func(ctx context.Context, spec responderSpec) responderHandle
	// pause detects that this process was not scheduled (pause.go).
	pause pauseWatch

	mu         sync.Mutex
	want       map[netip.Addr][]string // VIP -> override
	releasing  map[netip.Addr]bool     // wanted VIPs being handed over
	states     map[vipOnLink]*vipState // shared with the snapshots
	assigned   map[netip.Addr][]string // VIP -> interfaces announced on
	net        netState
	responders map[responderKey]*responderEntry
	// running is a copy of responders for readers that must not take mu:
	// a responder's own read loop (the fence tells the winner, reasserts)
	// while reconcileLocked, holding mu, closes that responder and waits
	// for its read loop to end (a deadlock, seen in CI).
	running atomic.Pointer[map[responderKey]*responder]
	warned  map[warning]bool // problems already logged
	// netlink is the run of failures of the netlink subscription.
	netlink trouble
	runCtx  context.Context // non-nil while Run runs
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
		releasing:  map[netip.Addr]bool{},
		states:     map[vipOnLink]*vipState{},
		assigned:   map[netip.Addr][]string{},
		responders: map[responderKey]*responderEntry{},
		warned:     map[warning]bool{},
	}
	a.pause.cfg = l2owner.Config{PauseAfter: cfg.PauseAfter}
	a.pause.epoch = time.Now()
	a.owned.Store(&ownership{})
	return a, nil
}

// SetAnnouncements replaces the set of VIPs this node announces and applies
// the difference at once: a new VIP is answered and advertised (gratuitous
// ARP / unsolicited NA, repeated), a VIP no longer listed is not answered
// any more, a VIP turning Releasing stops being advertised and is answered
// until another host announces it. Calling it again with the same set does
// nothing.
func (a *Announcer) SetAnnouncements(want []Announcement) {
	norm, releasing := normalize(want), releasingSet(want)
	a.mu.Lock()
	defer a.mu.Unlock()
	if maps.EqualFunc(a.want, norm, slices.Equal) && maps.Equal(a.releasing, releasing) {
		return
	}
	a.want, a.releasing = norm, releasing
	a.reconcileLocked()
}

// Interfaces returns the interfaces ip is currently announced on, sorted:
// those its responders answer on (an NDP responder may still be waiting a
// second or two for the link-local address to pass DAD). A releasing VIP
// is listed on the interfaces where no other host has taken it over yet.
func (a *Announcer) Interfaces(ip netip.Addr) []string {
	ip = ip.Unmap().WithZone("")
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.owned.Load()
	var out []string
	for _, name := range a.assigned[ip] {
		if !o.yielded(name, ip) {
			out = append(out, name)
		}
	}
	return out
}

// awakeCheck is the responders' pause check (see pause.go), nil without
// pause detection.
func (a *Announcer) awakeCheck() func() {
	if a.pause.cfg.PauseAfter <= 0 {
		return nil
	}
	return a.awake
}

// owns reports, from the current snapshot, whether vip is answered on iface.
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

// releasingSet returns the valid VIPs every entry of which is Releasing.
func releasingSet(want []Announcement) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, w := range want {
		ip := w.IP.Unmap().WithZone("")
		if !ip.IsValid() {
			continue
		}
		if r, seen := out[ip]; !seen || r {
			out[ip] = w.Releasing
		}
	}
	maps.DeleteFunc(out, func(_ netip.Addr, r bool) bool { return !r })
	return out
}
