package l2owner

import (
	"fmt"
	"time"
)

// AskFor is how long a process that found it was paused waits, silent,
// for another host to answer its question of who answers an address
// before it claims the address again. A node that took the address over
// answers in well under a millisecond on a LAN; a busy one was measured
// answering up to about 30 ms late in the lab (herald_l2_answer_delay
// during rolling updates). 100 ms covers that three times over, and it is
// the price of a false alarm: an address whose owner was starved, not
// dead, stays dark that much longer than the stall itself.
const AskFor = 100 * time.Millisecond

// Config holds what a Machine needs to know of the member list.
type Config struct {
	// PauseAfter is the longest this process may go unscheduled without
	// another node possibly having declared it dead and taken its
	// addresses over: the member list's quickest detection
	// (members.Timing.MinDetection). A longer gap is a pause.
	PauseAfter time.Duration
}

// Paused reports whether this process, which last ran at last and runs
// again at now (both read from a monotonic clock), was not scheduled for
// long enough that another node may have taken its addresses over.
func (c Config) Paused(last, now time.Time) bool {
	return c.PauseAfter > 0 && now.Sub(last) > c.PauseAfter
}

// Phase is where a Machine is.
type Phase uint8

// The phases.
const (
	// Idle: not announced here.
	Idle Phase = iota
	// Owner: the decision lists the address as owned here; answered
	// and advertised.
	Owner
	// Releasing: handed over (make-before-break); answered but never
	// advertised, until the new owner announces itself.
	Releasing
	// Asking: back from a pause; silent, asked who answers, waiting
	// until AskFor has passed.
	Asking
	// Deferred: back from a pause, another speaker answers (Machine.By);
	// silent until it gives the address up.
	Deferred
	// Yielded: released and taken over by another host; silent.
	Yielded
)

var phaseNames = [...]string{"idle", "owner", "releasing", "asking", "deferred", "yielded"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Kind is the kind of an Event.
type Kind uint8

// The kinds of events.
const (
	// Claim: the decision lists the address as owned here.
	Claim Kind = iota + 1
	// Release: the decision hands the address over to another node.
	Release
	// Pause: this process was not scheduled for Event.Gap, ending at
	// Event.At.
	Pause
	// Heard: the host Event.By answered for the address or announced it
	// (Event.Speaker: it is another speaker's node).
	Heard
	// Asked: the host Event.By asked who answers the address.
	Asked
	// Gone: the host this node deferred to no longer answers (nobody
	// answered a question of who answers).
	Gone
	// Tick: a time the machine asked to be woken at (Wake) has come.
	Tick
)

var kindNames = [...]string{"", "claim", "release", "pause", "heard", "asked", "gone", "tick"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one input of a Machine.
type Event struct {
	Kind Kind
	At   time.Time
	// By is the MAC of the other host (Heard, Asked), in net.HardwareAddr
	// String form.
	By string
	// Speaker: By is another speaker's node (known from the member list
	// or the Nodes).
	Speaker bool
	// Gap is how long this process was not scheduled (Pause).
	Gap time.Duration
}

// Do is what an Action does.
type Do uint8

// The actions.
const (
	// AnswerOff: answer nothing for the address and advertise nothing.
	AnswerOff Do = iota + 1
	// AnswerOn: answer again. An owner answers the requests received
	// from its next announcement on (the host that answered until then
	// answers those before); a releasing node at once.
	AnswerOn
	// Announce: send one gratuitous ARP / unsolicited NA now.
	Announce
	// Ask: ask who answers the address (an ARP probe / a neighbour
	// solicitation); the answers come back as Heard.
	Ask
	// Wake: feed a Tick at Action.At.
	Wake
	// Defer: the host Action.To answers the address; stay silent and
	// watch it (layer2's fence and its verification).
	Defer
	// Yield: a released address was taken over by Action.To.
	Yield
)

var doNames = [...]string{"", "answer-off", "answer-on", "announce", "ask", "wake", "defer", "yield"}

func (d Do) String() string {
	if int(d) < len(doNames) && d != 0 {
		return doNames[d]
	}
	return fmt.Sprintf("do(%d)", uint8(d))
}

// Action is one output of a Machine.
type Action struct {
	Do Do
	// At is when to wake (Wake).
	At time.Time
	// To is the other host's MAC (Defer, Yield).
	To string
}

// Machine is the ownership machine of one address on one interface. The
// zero Machine is Idle with no pause detection; use New.
type Machine struct {
	cfg   Config
	phase Phase
	// before is the phase a pause interrupted (Owner or Releasing),
	// while Asking.
	before Phase
	// askUntil is when Asking gives up waiting; askedAgain: the second
	// question went out.
	askUntil   time.Time
	askedAgain bool
	// by is the host deferred to or yielded to.
	by string
	// handing are the speakers heard asking who answers the address
	// since the pause: they are giving it up.
	handing map[string]bool
}

// New returns an Idle Machine.
func New(cfg Config) Machine { return Machine{cfg: cfg} }

// NewIn returns a Machine already in phase p (Owner or Releasing): one
// created for an address that was announced before the machine existed.
func NewIn(cfg Config, p Phase) Machine { return Machine{cfg: cfg, phase: p} }

// Phase is the machine's phase.
func (m *Machine) Phase() Phase { return m.phase }

// By is the host deferred or yielded to ("" when none).
func (m *Machine) By() string { return m.by }

// Silent reports whether the address is answered by nobody here because
// of the machine: it asks who answers, or defers, or yielded.
func (m *Machine) Silent() bool {
	return m.phase == Asking || m.phase == Deferred || m.phase == Yielded
}

// Step applies one event and returns the actions to take, in order.
func (m *Machine) Step(ev Event) []Action {
	switch ev.Kind {
	case Claim:
		return m.claim()
	case Release:
		return m.release()
	case Pause:
		return m.pause(ev)
	case Heard:
		return m.heard(ev)
	case Asked:
		return m.asked(ev)
	case Gone:
		return m.gone()
	case Tick:
		return m.tick(ev)
	}
	return nil
}

// claim: the decision lists the address as owned. A new or released
// address is claimed; one asked about or deferred stays so (the pause
// rule decides).
func (m *Machine) claim() []Action {
	switch m.phase {
	case Idle, Releasing, Yielded:
		return m.become(Owner)
	case Asking:
		m.before = Owner
	}
	return nil
}

// release: the decision hands the address over. An owner answers until
// the new owner announces itself; a deferred one was handed over already.
func (m *Machine) release() []Action {
	switch m.phase {
	case Owner:
		m.phase = Releasing
	case Asking:
		m.before = Releasing
	case Deferred:
		m.phase = Yielded
		return []Action{{Do: Yield, To: m.by}}
	}
	return nil
}

// pause: a gap longer than PauseAfter silences an answered address and
// asks who answers it now.
func (m *Machine) pause(ev Event) []Action {
	if m.cfg.PauseAfter <= 0 || ev.Gap <= m.cfg.PauseAfter {
		return nil
	}
	switch m.phase {
	case Owner, Releasing:
		m.before = m.phase
	case Asking:
	default:
		return nil
	}
	m.phase = Asking
	m.askUntil = ev.At.Add(AskFor)
	m.askedAgain = false
	m.handing = nil
	return []Action{{Do: AnswerOff}, {Do: Ask}, {Do: Wake, At: ev.At.Add(AskFor / 2)}}
}

// heard: another host answered or announced the address. While asking, a
// speaker that answers is deferred to (or, for a released address,
// yielded to), unless it was heard giving the address up: then this node
// claims it. Other hosts are ignored here.
func (m *Machine) heard(ev Event) []Action {
	if m.phase != Asking || !ev.Speaker || ev.By == "" {
		return nil
	}
	if m.before == Releasing {
		m.phase, m.by = Yielded, ev.By
		return []Action{{Do: Yield, To: ev.By}}
	}
	if m.handing[ev.By] {
		return m.become(Owner)
	}
	m.phase, m.by = Deferred, ev.By
	return []Action{{Do: Defer, To: ev.By}}
}

// asked: another speaker asked who answers the address. The one deferred
// to gives it up (it hands it over): claim it. While asking, remember it.
func (m *Machine) asked(ev Event) []Action {
	if !ev.Speaker || ev.By == "" {
		return nil
	}
	switch m.phase {
	case Deferred:
		if ev.By == m.by {
			return m.become(Owner)
		}
	case Asking:
		if m.handing == nil {
			m.handing = map[string]bool{}
		}
		m.handing[ev.By] = true
	}
	return nil
}

// gone: the host deferred to stopped answering: claim the address.
func (m *Machine) gone() []Action {
	if m.phase != Deferred {
		return nil
	}
	return m.become(Owner)
}

// tick: while asking, ask a second time halfway (a question or its
// answer may be lost), and when AskFor has passed with no speaker heard,
// nobody took the address over: answer it again.
func (m *Machine) tick(ev Event) []Action {
	if m.phase != Asking {
		return nil
	}
	if ev.At.Before(m.askUntil) {
		if m.askedAgain {
			return nil
		}
		m.askedAgain = true
		return []Action{{Do: Ask}, {Do: Wake, At: m.askUntil}}
	}
	if m.before == Releasing {
		m.phase = Releasing
		return []Action{{Do: AnswerOn}}
	}
	return m.become(Owner)
}

// become claims the address as its owner: answer the requests received
// from its announcement on, and announce it. The host that answered
// until then answers those received before, and stops when it reads the
// announcement (make-before-break).
func (m *Machine) become(p Phase) []Action {
	m.phase, m.by, m.handing = p, "", nil
	return []Action{{Do: AnswerOn}, {Do: Announce}}
}
