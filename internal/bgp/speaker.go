package bgp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Speaker owns one embedded GoBGP server and applies desired state to it.
type Speaker struct {
	log     *slog.Logger
	gobgpH  slog.Handler
	events  *eventQueue
	status  *statusTable
	metrics *metrics
	listen  listenConfig
	// findNeighbor resolves unnumbered sessions' interfaces, again every
	// neighborEvery while some desired session is unnumbered.
	findNeighbor  func(string) (netip.Addr, error)
	neighborEvery time.Duration

	mu         sync.Mutex // serializes Apply and Shutdown; guards the fields below
	srv        *gobgp
	configured map[string]Session          // in GoBGP, normalized, by name
	rib        map[netip.Prefix]netip.Addr // in GoBGP's RIB, with next hop
	deliveries map[netip.Prefix]delivery   // as rendered in the export policy
	layout     policyLayout                // of the installed export policy
	warns      *warnings                   // of the paths applied
	last       lastApply                   // what the last Apply was given besides paths
	pathsOnly  bool                        // ApplyPaths may build on the state above
	want       wanted                      // the whole desired state, ApplyPaths' changes included
	neighbors  string                      // what resolveInterfaces found at the last apply
	watchStop  chan struct{}               // closes the neighbour watch; nil when none runs
	closed     bool
	// weightsHeld are the prefixes whose changed link-bandwidth weights
	// wait (weightHold), with when the change began; weightTimer sends
	// them. clock is time.Now but in tests.
	weightsHeld map[netip.Prefix]time.Time
	weightTimer *time.Timer
	clock       func() time.Time
	gshutWait   time.Duration // Config.GracefulShutdownWait
	srvRef      sync.Mutex    // guards srvNow, read by Sessions and metrics
	srvNow      *gobgp
}

// New returns a Speaker. It starts nothing: the GoBGP server starts at the
// first Apply that has a session. It fails only when the metrics cannot be
// registered.
func New(cfg Config) (*Speaker, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Speaker{
		log:         log,
		events:      newEventQueue(cfg.OnSessionChange),
		status:      newStatusTable(),
		configured:  map[string]Session{},
		rib:         map[netip.Prefix]netip.Addr{},
		deliveries:  map[netip.Prefix]delivery{},
		warns:       newWarnings(),
		weightsHeld: map[netip.Prefix]time.Time{},
		clock:       time.Now,
		gshutWait:   cfg.GracefulShutdownWait,
		listen:      listenConfig{port: cfg.ListenPort, addrs: slices.Clone(cfg.ListenAddresses)},

		findNeighbor:  cfg.FindNeighbor,
		neighborEvery: cmp.Or(cfg.NeighborInterval, defaultNeighborInterval),
	}
	if s.findNeighbor == nil {
		s.findNeighbor = kernelNeighborFinder(log)
	}
	s.gobgpH = newGobgpHandler(log.Handler(), s.onConnectError, s.onBadPeerAS)
	m, err := newMetrics(cfg.Registerer, s.snapshot)
	if err != nil {
		s.events.close()
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Apply makes GoBGP hold exactly the desired sessions and paths, changing
// only what differs from the last Apply: a new path never resets a session,
// a changed session never disturbs the others. Sessions that cannot be
// configured are reported (Sessions().Error) and in the returned error;
// the rest is applied anyway. It keeps d's slices (ApplyPaths may apply
// them again): the caller must not change them afterwards.
func (s *Speaker) Apply(ctx context.Context, d Desired) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("bgp speaker is shut down")
	}
	s.want = wantedFrom(d)
	return s.apply(ctx, d)
}

// apply is Apply with s.mu held.
func (s *Speaker) apply(ctx context.Context, d Desired) error {
	s.pathsOnly = false // until this Apply has taken
	res := resolveInterfaces(d.Sessions, s.findNeighbor)
	s.neighbors = res.key
	s.watchNeighbors(unnumbered(d.Sessions))
	routerID := routerIDFor(d)
	if s.srv != nil && routerID.IsValid() && routerID != s.srv.routerID {
		s.log.Info("router ID changed: restarting the BGP server", "old", s.srv.routerID, "new", routerID)
		s.stopServer("router ID changed")
	}
	plan := planSessions(s.configured, res.sessions, s.effectiveRouterID(routerID))
	listen := wantListen(plan, s.listen, d)
	if s.srv != nil && listen != s.srv.listen {
		s.log.Info("BGP listener needed elsewhere: restarting the BGP server", "old", s.srv.listen, "new", listen)
		s.stopServer("BGP listener changed")
		plan = planSessions(s.configured, res.sessions, s.effectiveRouterID(routerID))
	}
	maps.Copy(plan.refused, res.refused)
	stopped := s.srv == nil
	if err := s.ensureServer(ctx, plan, routerID, listen); err != nil {
		return err
	}
	if s.srv != nil && s.srv.listenErr != nil {
		plan.refusePassive(s.srv.listenErr)
	}
	// The sessions a newly started server adds are a restart's: the
	// router may hold routes of ours from the server before.
	errs := s.applySessions(ctx, plan, stopped && s.srv != nil)
	errs = append(errs, s.applyPaths(ctx, d)...)
	s.pruneStatus(d.Sessions)
	s.pathsOnly = len(errs) == 0
	return errors.Join(errs...)
}

// effectiveRouterID is the router ID sessions must match: the running
// server's, unless it is about to be (re)started with the desired one.
func (s *Speaker) effectiveRouterID(desired netip.Addr) netip.Addr {
	if s.srv != nil {
		return s.srv.routerID
	}
	return desired
}

// ensureServer starts GoBGP when there is a session to hold.
func (s *Speaker) ensureServer(ctx context.Context, plan sessionPlan, routerID netip.Addr, listen listenSpec) error {
	if s.srv != nil || len(plan.add) == 0 {
		return nil
	}
	first := slices.MinFunc(plan.add, func(a, b Session) int { return cmp.Compare(a.Name, b.Name) })
	// Every neighbor sets its own local AS; the global AS only has to be
	// valid, so the first session's is used.
	g, err := startGobgp(ctx, s.gobgpH, routerID, first.MyASN, listen, s.onPeerEvent)
	if err != nil {
		return err
	}
	if g.listenErr != nil {
		s.log.Error("BGP server started without its listener: passive sessions refused", "error", g.listenErr)
	}
	s.log.Info("BGP server started", "routerID", routerID, "asn", first.MyASN, "listen", listen)
	s.srv = g
	s.setSrvNow(g)
	return nil
}

// stopServer stops GoBGP and forgets everything it held.
func (s *Speaker) stopServer(reason string) {
	for _, n := range sortedKeys(s.configured) {
		s.forgetSession(s.configured[n], reason)
	}
	// Forgotten before it stops: Failure must not take a server stopped
	// on purpose for one that stopped working.
	s.setSrvNow(nil)
	s.srv.stop()
	s.srv = nil
	s.configured = map[string]Session{}
	s.rib = map[netip.Prefix]netip.Addr{}
	s.deliveries = map[netip.Prefix]delivery{}
	s.layout = nil
	s.pathsOnly = false
	clear(s.weightsHeld)
}

func (s *Speaker) setSrvNow(g *gobgp) {
	s.srvRef.Lock()
	s.srvNow = g
	s.srvRef.Unlock()
}

func (s *Speaker) currentServer() *gobgp {
	s.srvRef.Lock()
	defer s.srvRef.Unlock()
	return s.srvNow
}

// pruneStatus forgets the status of sessions no longer desired.
func (s *Speaker) pruneStatus(desired []Session) {
	keep := map[string]bool{}
	for _, ss := range desired {
		keep[ss.Name] = true
	}
	s.status.prune(keep)
}

// forgetSession records that a session left GoBGP and reports Down if it
// was up.
func (s *Speaker) forgetSession(ss Session, reason string) {
	old := s.status.forget(ss)
	if old.up {
		s.emit(ss, false, reason)
	}
}

func (s *Speaker) emit(ss Session, up bool, reason string) {
	ev := SessionEvent{Name: ss.Name, Peer: ss.PeerAddress, Up: up, Reason: reason, Time: time.Now()}
	if up {
		s.log.Info("BGP session established", "session", ss.Name, "peer", ss.PeerAddress)
	} else {
		s.log.Info("BGP session down", "session", ss.Name, "peer", ss.PeerAddress, "reason", reason)
	}
	s.events.push(ev)
}

func wrapSession(name string, err error) error {
	return fmt.Errorf("bgp session %s: %w", name, err)
}
