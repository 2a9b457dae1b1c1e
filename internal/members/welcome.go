package members

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// A starting member settles only once the members it found have acted on
// its arrival: their user (the speaker) has applied a decision that saw
// it up. What acting on it means is the user's (internal/l2owner says
// why the speaker needs it); this file only carries the messages, opaque
// beyond who sent them.
//
// The newcomer greets every live member with a hello, a memberlist user
// message in a UDP packet (encrypted like the rest), resent until
// answered, from its first successful join on, and each member it learns
// of while it waits (through gossip or a join still running). A member
// answers with a welcome once its user has applied a decision that saw
// the newcomer up (Members.Applied; at once when Config.WelcomeAfterApplied
// is off), and the newcomer settles once every member it greeted has
// welcomed it or is no longer a live member and its first joins have
// returned, or Config.WelcomeTimeout after the greeting began (a member
// of an earlier version ignores the hello). A fixed wait after the joins
// instead (150 ms before this) failed on a busy machine, whose user
// applied 300 ms late. The joins never delay the greeting
// (joiner.start): an address that accepts a connection and never answers
// holds a join for Timing.StreamTimeout, far longer than the timeout.

// Messages are memberlist user messages: a magic byte, a version, the
// kind, the newcomer's nonce (a welcome echoes the hello's) and the
// sender's node name.
const (
	welcomeMagic   = 'W'
	welcomeVersion = 1
	kindHello      = 1
	kindWelcome    = 2
	welcomeHeader  = 3 + 8
)

type welcomeMsg struct {
	kind  byte
	nonce uint64
	from  string
}

func (m welcomeMsg) encode() []byte {
	b := make([]byte, welcomeHeader, welcomeHeader+len(m.from))
	b[0], b[1], b[2] = welcomeMagic, welcomeVersion, m.kind
	binary.BigEndian.PutUint64(b[3:], m.nonce)
	return append(b, m.from...)
}

var errNotWelcome = errors.New("not a hello or welcome message")

func decodeWelcomeMsg(b []byte) (welcomeMsg, error) {
	if len(b) <= welcomeHeader || len(b) > welcomeHeader+maxNodeName ||
		b[0] != welcomeMagic || b[1] != welcomeVersion || (b[2] != kindHello && b[2] != kindWelcome) {
		return welcomeMsg{}, errNotWelcome
	}
	return welcomeMsg{kind: b[2], nonce: binary.BigEndian.Uint64(b[3:]), from: string(b[welcomeHeader:])}, nil
}

// welcomer plays both parts: it welcomes the members that greet this one,
// and greets the others when this one starts.
type welcomer struct {
	name         string
	book         *book
	dir          *directory
	log          *slog.Logger
	afterApplied bool
	wake         chan struct{} // the outbox has messages

	mu      sync.Mutex
	applied uint64            // the highest generation the user applied
	pending map[string]uint64 // members that greeted this one: their nonce
	outbox  []outgoing

	// as a newcomer: the nonce of this node's hellos, who welcomed it
	nonce    uint64
	welcomed map[string]bool
	arrived  chan struct{}
}

type outgoing struct {
	to  string
	msg welcomeMsg
}

func newWelcomer(name string, b *book, dir *directory, log *slog.Logger, afterApplied bool) *welcomer {
	return &welcomer{
		name: name, book: b, dir: dir, log: log, afterApplied: afterApplied,
		wake: make(chan struct{}, 1), arrived: make(chan struct{}, 1),
		pending: make(map[string]uint64), welcomed: make(map[string]bool),
	}
}

// receive handles a user message. It runs on memberlist's goroutines and
// only records: sending is sendLoop's, so that no packet is written under
// w.mu or in memberlist's callbacks (flush runs in them).
func (w *welcomer) receive(b []byte) {
	m, err := decodeWelcomeMsg(b)
	if err != nil || m.from == w.name {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch m.kind {
	case kindHello:
		w.pending[m.from] = m.nonce
		w.flushLocked()
	case kindWelcome:
		if m.nonce == w.nonce && !w.welcomed[m.from] {
			w.welcomed[m.from] = true
			signal(w.arrived)
		}
	}
}

// setApplied records that the user applied a decision taken from states
// at least as new as generation gen, and welcomes who it may now.
func (w *welcomer) setApplied(gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen > w.applied {
		w.applied = gen
	}
	w.flushLocked()
}

// flush welcomes who it may now (a member came up).
func (w *welcomer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

// flushLocked queues a welcome for every member that greeted this one,
// is up in the book and, with afterApplied, came up no later than the
// generation the user applied.
func (w *welcomer) flushLocked() {
	queued := false
	for node, nonce := range w.pending {
		upGen, isUp := w.book.upSince(node)
		if !isUp || (w.afterApplied && upGen > w.applied) {
			continue
		}
		w.outbox = append(w.outbox, outgoing{to: node, msg: welcomeMsg{kind: kindWelcome, nonce: nonce, from: w.name}})
		delete(w.pending, node)
		queued = true
	}
	if queued {
		signal(w.wake)
	}
}

// sendLoop sends the queued welcomes until ctx ends.
func (w *welcomer) sendLoop(ctx context.Context, ml *memberlist.Memberlist) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.mu.Lock()
		out := w.outbox
		w.outbox = nil
		w.mu.Unlock()
		for _, o := range out {
			if err := w.send(ml, o.to, o.msg); err != nil {
				w.log.Debug("cannot welcome member", "member", o.to, "error", err)
			}
		}
	}
}

func (w *welcomer) send(ml *memberlist.Memberlist, node string, m welcomeMsg) error {
	n, ok := w.dir.node(node)
	if !ok {
		return errors.New("not a live member")
	}
	return ml.SendBestEffort(n, m.encode())
}

// greet sends a hello to every other live member that is not leaving,
// and to each that becomes one while it waits (learned through gossip
// or a join still running), and waits until each has welcomed this node
// or is no longer such a member and joins is closed (nil: nothing more
// to wait for), or until deadline or ctx ends. A member that has not
// welcomed it yet is greeted again every helloResend (the messages are
// UDP packets: a lost one costs a resend, and none leaves a TCP
// connection in TIME_WAIT). It returns how many it greeted and those
// that did not welcome it.
func (w *welcomer) greet(ctx context.Context, ml *memberlist.Memberlist, deadline time.Time, joins <-chan struct{}) (int, []string) {
	w.mu.Lock()
	w.nonce = rand.Uint64() | 1 // never the zero nonce of a node that never greeted
	clear(w.welcomed)
	hello := welcomeMsg{kind: kindHello, nonce: w.nonce, from: w.name}
	w.mu.Unlock()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	resend := time.NewTicker(helloResend)
	defer resend.Stop()
	var peers []string // greeted, sorted
	resendDue := false
	for {
		var fresh []string
		for _, p := range w.dir.staying(w.name) {
			if _, found := slices.BinarySearch(peers, p); !found {
				fresh = append(fresh, p)
			}
		}
		w.sendHello(ml, fresh, hello)
		peers = slices.Sorted(slices.Values(append(peers, fresh...)))
		silent := w.notWelcomed(peers)
		if len(silent) == 0 && joins == nil {
			return len(peers), nil
		}
		if resendDue {
			w.sendHello(ml, slices.DeleteFunc(slices.Clone(silent), func(p string) bool { return slices.Contains(fresh, p) }), hello)
			resendDue = false
		}
		select {
		case <-ctx.Done():
			return len(peers), silent
		case <-timeout.C:
			return len(peers), w.notWelcomed(peers)
		case <-w.arrived:
		case <-w.dir.changed:
		case <-joins:
			joins = nil
		case <-resend.C:
			resendDue = true
		}
	}
}

func (w *welcomer) sendHello(ml *memberlist.Memberlist, to []string, hello welcomeMsg) {
	for _, node := range to {
		if err := w.send(ml, node, hello); err != nil {
			w.log.Debug("cannot greet member", "member", node, "error", err)
		}
	}
}

// helloResend is how often a starting member greets again the members
// that have not welcomed it.
const helloResend = 100 * time.Millisecond

// notWelcomed returns the peers that are still staying members and have
// not welcomed this node.
func (w *welcomer) notWelcomed(peers []string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range peers {
		if !w.welcomed[p] && w.dir.isStaying(p) {
			out = append(out, p)
		}
	}
	return out
}

// signal wakes whoever waits on c, without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
