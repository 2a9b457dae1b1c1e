package layer2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// protocol is the ARP or NDP half of a responder: its sockets and packets.
type protocol interface {
	// open opens the sockets on ifi.
	open(ifi *net.Interface) error
	// serve starts the read loops on wg; they end when the sockets close.
	serve(ctx context.Context, wg *sync.WaitGroup)
	// close closes the sockets.
	close()
	// gratuitous sends one gratuitous ARP / unsolicited NA for vip.
	gratuitous(vip netip.Addr) error
	// solicit asks who answers for vip (an ARP probe from 0.0.0.0, a
	// neighbour solicitation from the link-local address); the answers
	// are reported to responderSpec.heard.
	solicit(vip netip.Addr) error
	// notify sends one gratuitous ARP / unsolicited NA for vip to the host
	// with MAC to only (see Announcer.noticeConflict).
	notify(vip netip.Addr, to net.HardwareAddr) error
	// giveUp sends one ARP probe / neighbour solicitation from the
	// unspecified address for vip to the host with MAC to only: this node
	// gave up vip, which that host lost the fence for (see tellBeaten).
	giveUp(vip netip.Addr, to net.HardwareAddr) error
	// setVIPs tells which VIPs are announced on the interface.
	setVIPs(vips []netip.Addr)
}

// responderHandle is what the announcer needs of a responder.
type responderHandle interface {
	setVIPs(vips []netip.Addr)
	announce(vip netip.Addr)
	silence(vip netip.Addr)
	nudge()
	close()
}

// responderSpec says which responder to start.
type responderSpec struct {
	iface string
	index int
	mac   net.HardwareAddr
	proto string // protoARP or protoNDP
	// owns says whether vip is answered here, advertises whether
	// gratuitous packets may be sent for it, announced records that one
	// was (see vipState), releasing says whether vip is being handed over
	// and still answered; yield records that another host (by) announced
	// it (fed to its machine, see Announcer.foreignAnnouncement).
	owns func(vip netip.Addr) bool
	// answersFrom is when this node began answering for an owned vip with
	// its first gratuitous packet (zero: answering carried over, or no
	// such limit): a request the kernel received before that is left to
	// the previous owner, which answers it (see sendAnswer).
	answersFrom func(vip netip.Addr) time.Time
	advertises  func(vip netip.Addr) bool
	announced   func(vip netip.Addr)
	releasing   func(vip netip.Addr) bool
	// announces says whether vip is owned or released here at all: another
	// host's announcement of such a VIP is reported to yield.
	announces func(vip netip.Addr) bool
	yield     func(vip netip.Addr, by net.HardwareAddr)
	// notice records that another host (by) told this node alone, in an
	// announcement sent to its MAC, that it announces vip too: the loser
	// of a fence telling the winner (see Announcer.noticeConflict).
	notice func(vip netip.Addr, by net.HardwareAddr)
	// gaveUp records that another host (by) told this node alone, in a
	// probe sent to its MAC, that it gave vip up: the winner of a fence
	// telling the loser (see Announcer.gaveUp).
	gaveUp func(vip netip.Addr, by net.HardwareAddr)
	// heard records that another host (by; nil when unknown) answered
	// for vip: a reply to solicit.
	heard func(vip netip.Addr, by net.HardwareAddr)
	// asked records that another host (by) asked who answers vip: an
	// ARP probe, or a neighbour solicitation from its MAC (see pause.go).
	asked func(vip netip.Addr, by net.HardwareAddr)
	// awake checks that this process was not paused (see pause.go); it
	// runs first for every frame read and every announcement sent.
	awake func()
	// vips lists the VIPs the periodic refresh announces, every refresh
	// (0: none).
	vips    func() []netip.Addr
	refresh time.Duration
	// sending is held for reading while an answer is sent (see
	// responder.sending and sendAnswer); startResponder sets it.
	sending *sync.RWMutex
	log     *slog.Logger
	metrics *metrics
	grat    GratuitousConfig
	// delays records how late answers were; startResponder sets it.
	delays *answerDelays
	// troubles are the runs of failures of the responder's sockets (see
	// Announcer.Failure); startResponder sets it.
	troubles *socketTroubles
}

// responder answers one protocol on one interface. Its goroutine opens the
// sockets (retrying while the interface is not ready), serves until closed,
// and sends gratuitous bursts for newly announced VIPs.
type responder struct {
	spec   responderSpec
	p      protocol
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	nudges chan struct{}
	ready  chan struct{}
	// troubles: see responderSpec.troubles.
	troubles socketTroubles

	mu     sync.Mutex
	bursts map[netip.Addr]*burst
	// sending is held while a gratuitous packet is checked for and sent,
	// so that silence can wait for one in flight, and held for reading
	// while an answer is sent (spec.sending), so that the answers to a VIP
	// that has just become answerable leave after its first announcement.
	sending sync.RWMutex
}

type burst struct{ cancel context.CancelFunc }

// startResponder starts the responder described by spec under parent.
func startResponder(parent context.Context, spec responderSpec) responderHandle {
	spec.log = spec.log.With("interface", spec.iface, "protocol", spec.proto)
	r := &responder{
		log:    spec.log,
		nudges: make(chan struct{}, 1),
		ready:  make(chan struct{}),
		bursts: map[netip.Addr]*burst{},
	}
	spec.sending = &r.sending
	spec.troubles = &r.troubles
	spec.delays = newAnswerDelays(spec.log, spec.metrics.answerDelay.WithLabelValues(spec.iface, spec.proto))
	r.spec = spec
	if spec.proto == protoARP {
		r.p = newARPProto(spec)
	} else {
		r.p = newNDPProto(spec)
	}
	r.ctx, r.cancel = context.WithCancel(parent)
	r.wg.Go(r.run)
	return r
}

func (r *responder) run() {
	if !r.openWithRetry() {
		r.log.Debug("responder closed before it could open")
		return
	}
	close(r.ready)
	r.log.Info("responder opened")
	r.p.serve(r.ctx, &r.wg)
	r.wg.Go(r.refreshLoop)
	<-r.ctx.Done()
	r.p.close()
	r.log.Info("responder closed")
}

// warnAfterAttempts is the failed open attempt (about 10 s in) at which a
// responder that is still not open is worth a warning: a tentative
// link-local address takes only a second or two.
const warnAfterAttempts = 10

// openWithRetry opens the sockets, retrying with backoff (or at once when
// nudged) until it works or the responder is closed. An IPv6 link-local
// address stays tentative for a second or two after link-up, and binding to
// it fails until then.
func (r *responder) openWithRetry() bool {
	bo := newBackoff(50*time.Millisecond, 2*time.Second)
	for attempt := 1; ; attempt++ {
		err := r.open()
		if err == nil {
			r.spec.socketWorked(opKindOpen)
			return true
		}
		r.spec.socketFailed(opKindOpen, err)
		switch attempt {
		case 1:
			r.log.Info("responder not ready, retrying", "error", err)
		case warnAfterAttempts:
			r.log.Warn("responder still cannot open, retrying", "attempt", attempt, "error", err)
		default:
			r.log.Debug("responder still not ready", "attempt", attempt, "error", err)
		}
		if !wait(r.ctx, bo.next(), r.nudges) {
			return false
		}
	}
}

func (r *responder) open() error {
	ifi, err := net.InterfaceByIndex(r.spec.index)
	if err != nil {
		return fmt.Errorf("interface %s: %w", r.spec.iface, err)
	}
	if ifi.Name != r.spec.iface || !bytes.Equal(ifi.HardwareAddr, r.spec.mac) {
		return fmt.Errorf("interface %s: index %d is now %s %s", r.spec.iface, r.spec.index, ifi.Name, ifi.HardwareAddr)
	}
	if err := r.p.open(ifi); err != nil {
		return fmt.Errorf("interface %s: %w", r.spec.iface, err)
	}
	return nil
}

func (r *responder) setVIPs(vips []netip.Addr) { r.p.setVIPs(vips) }

// opened reports whether the responder's sockets are open (they stay open
// until it is closed).
func (r *responder) opened() bool {
	select {
	case <-r.ready:
		return r.ctx.Err() == nil
	default:
		return false
	}
}

// awaitOpen waits until the responder's sockets are open and reports
// whether they are (false once the responder is closed). A protocol's
// sockets exist only once open has run, so everything sent from outside
// the responder's own loops waits for this first: a VIP that turned
// releasing on a responder still opening (a node that had just claimed
// it, its interface's responder new) made the speaker ask who answers it
// through a socket not yet there, a nil dereference that restarted the
// speaker and left the node's other VIPs dark.
func (r *responder) awaitOpen() bool {
	select {
	case <-r.ready:
		return r.ctx.Err() == nil
	case <-r.ctx.Done():
		return false
	}
}

// nudge asks a responder that is still opening to retry now.
func (r *responder) nudge() {
	select {
	case r.nudges <- struct{}{}:
	default:
	}
}

// close stops the responder and waits for its goroutines.
func (r *responder) close() {
	r.cancel()
	r.wg.Wait()
}

// announce starts a gratuitous burst for vip, replacing one in progress.
func (r *responder) announce(vip netip.Addr) {
	ctx, cancel := context.WithCancel(r.ctx)
	b := &burst{cancel: cancel}
	r.mu.Lock()
	if old := r.bursts[vip]; old != nil {
		old.cancel()
	}
	r.bursts[vip] = b
	r.mu.Unlock()
	r.wg.Go(func() {
		defer r.endBurst(vip, b)
		r.sendBurst(ctx, vip)
	})
}

// silence stops a gratuitous burst in progress for vip. When it returns, no
// gratuitous packet for vip is being sent and none will be until announce
// is called again; if vip is no longer owned, no answer for it is being
// sent either (see sendAnswer).
func (r *responder) silence(vip netip.Addr) {
	// Cancelling under sending waits for a packet in flight, and
	// sendGratuitous sees the cancellation before sending another.
	r.sending.Lock()
	defer r.sending.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.bursts[vip]; b != nil {
		b.cancel()
		delete(r.bursts, vip)
	}
}

func (r *responder) endBurst(vip netip.Addr, b *burst) {
	b.cancel()
	r.mu.Lock()
	if r.bursts[vip] == b {
		delete(r.bursts, vip)
	}
	r.mu.Unlock()
}

// sendBurst sends grat.Count announcements, the first as soon as the
// sockets are open, and stops early when vip is no longer announced here or
// is being handed over.
func (r *responder) sendBurst(ctx context.Context, vip netip.Addr) {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return
	}
	for i := range r.spec.grat.Count {
		if i > 0 && !wait(ctx, r.spec.grat.Interval, nil) {
			return
		}
		sent, err := r.sendGratuitous(ctx, vip)
		if !sent {
			return
		}
		if err != nil {
			r.log.Warn("sending gratuitous announcement failed", "ip", vip, "error", err)
			continue
		}
		r.log.Debug("sent gratuitous announcement", "ip", vip, "n", i+1)
	}
}

// sendGratuitous sends one gratuitous packet for vip unless the burst was
// cancelled or vip may not be advertised any more; it reports whether it
// tried. The packet is counted before silence can return.
func (r *responder) sendGratuitous(ctx context.Context, vip netip.Addr) (bool, error) {
	r.spec.checkAwake()
	r.sending.Lock()
	defer r.sending.Unlock()
	if ctx.Err() != nil || !r.spec.advertises(vip) {
		return false, nil
	}
	// Answer from the announcement on (even if sending it fails: silence
	// would be worse). Marked just before sending, not after: the send
	// returns only once the kernel has also handled what arrived
	// meanwhile, and a request read in that time would go unanswered by
	// both this node and a releasing one that has already yielded.
	r.spec.announced(vip)
	if err := r.p.gratuitous(vip); err != nil {
		r.spec.socketFailed(opKindSend, err)
		return true, err
	}
	r.spec.socketWorked(opKindSend)
	r.spec.metrics.gratuitous.WithLabelValues(r.spec.iface, r.spec.proto).Inc()
	return true, nil
}

// sendAnswer sends an answer for vip (an ARP reply or a solicited NA) with
// send, and counts it, unless vip stopped being answered here since the
// request was matched: ownership is checked again under sending, so that
// once silence has returned for a withdrawn VIP no answer for it leaves.
// It reports whether it tried.
func (s responderSpec) sendAnswer(vip netip.Addr, received time.Time, send func() error) (bool, error) {
	s.sending.RLock()
	defer s.sending.RUnlock()
	if !s.owns(vip) || s.beforeOurAnnouncement(vip, received) {
		return false, nil
	}
	if err := send(); err != nil {
		s.socketFailed(opKindSend, err)
		return true, err
	}
	s.socketWorked(opKindSend)
	s.metrics.responses.WithLabelValues(s.iface, s.proto).Inc()
	return true, nil
}

// beforeOurAnnouncement reports whether a request for vip, received by
// the kernel at received, came before this node's first gratuitous packet
// for it. The previous owner answers such a request (it stops only when it
// reads that packet, which came after the request); answering it here too,
// when this node reads it after its announcement, would answer it twice
// (seen in the lab: three requests queued at a hand-over, answered by both
// nodes 9-28 ms apart).
func (s responderSpec) beforeOurAnnouncement(vip netip.Addr, received time.Time) bool {
	if s.answersFrom == nil || received.IsZero() {
		return false
	}
	from := s.answersFrom(vip)
	return !from.IsZero() && received.Before(from)
}

// checkAwake runs the pause check, when there is one.
func (s responderSpec) checkAwake() {
	if s.awake != nil {
		s.awake()
	}
}

// countMalformed counts a frame that did not parse, and skips it: a host
// that sends malformed ARP or NDP costs a parse per frame, never an answer.
func (s responderSpec) countMalformed(err error) {
	s.metrics.malformed.WithLabelValues(s.iface, s.proto).Inc()
	s.log.Debug("skipped a malformed frame", "error", err)
}

// readFailed handles an error from a read loop's socket. It returns false
// when the responder is closing (the error is the socket being closed: the
// libraries' errors for that are not errors.Is net.ErrClosed); otherwise it
// logs and pauses, so a persistent error does not spin.
func (s responderSpec) readFailed(ctx context.Context, bo *backoff, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	log := s.log
	s.socketFailed(opKindRead, err)
	if errors.Is(err, syscall.ENETDOWN) {
		// The link went down; the announcer closes this responder.
		log.Debug("reading packets failed", "error", err)
	} else {
		log.Warn("reading packets failed", "error", err)
	}
	return wait(ctx, bo.next(), nil)
}
