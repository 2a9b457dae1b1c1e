package l2owner

import (
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Config holds what a Machine needs to know: the member list's detection,
// the fence's timing, and whose machine it is.
type Config struct {
	// PauseAfter is the longest this process may go unscheduled without
	// another node possibly having declared it dead and taken its
	// addresses over: the member list's quickest detection
	// (members.Timing.MinDetection). A longer gap is a pause. 0: no
	// pause detection.
	PauseAfter time.Duration
	// Refresh is how often owners announce their addresses again (0:
	// Refresh); a lost fence lasts 2 × Refresh after the winner was last
	// heard. Negative: nobody refreshes, and a lost fence silences
	// nothing (it is still reported).
	Refresh time.Duration
	// FenceSettle and FenceVerify: see the constants (0: those).
	FenceSettle time.Duration
	FenceVerify time.Duration
	// Addr is the address, MAC the MAC of this node's interface: the
	// fence ranks it against the other host's (Wins).
	Addr netip.Addr
	MAC  net.HardwareAddr
}

// Paused reports whether this process, which last ran at last and runs
// again at now (both read from a monotonic clock), was not scheduled for
// long enough that another node may have taken its addresses over.
func (c Config) Paused(last, now time.Time) bool {
	return c.PauseAfter > 0 && now.Sub(last) > c.PauseAfter
}

func (c Config) withDefaults() Config {
	if c.Refresh == 0 {
		c.Refresh = Refresh
	}
	if c.FenceSettle <= 0 {
		c.FenceSettle = FenceSettle
	}
	if c.FenceVerify <= 0 {
		c.FenceVerify = FenceVerify
	}
	return c
}

// hold is how long a lost fence or a deferral lasts after the winner was
// last heard: two refreshes, so that one lost frame does not lift it.
func (c Config) hold() time.Duration { return 2 * c.Refresh }

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
	// advertised, until the new owner shows itself.
	Releasing
	// Asking: back from a pause; silent, asked who answers, waiting
	// until AskFor has passed.
	Asking
	// Deferred: back from a pause, another speaker answers (Machine.By);
	// silent until it gives the address up or stops answering.
	Deferred
	// Yielded: released and taken over by another host; silent.
	Yielded
	// Fenced: owned here, but another speaker's node (Machine.By) that
	// outranks this one (Wins) announces it too: silent while that node
	// is heard, and while it answers the fence's verification.
	Fenced
)

var phaseNames = [...]string{"idle", "owner", "releasing", "asking", "deferred", "yielded", "fenced"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Kind is the kind of an Event.
type Kind uint8

// The kinds of events. By is the other host's MAC, Speaker whether it is
// another speaker's node (known from the member list or the Nodes).
const (
	// Claim: the decision lists the address as owned here.
	Claim Kind = iota + 1
	// Release: the decision hands the address over to another node.
	Release
	// Drop: the address is no longer announced here (on this interface).
	Drop
	// Pause: this process was not scheduled for Event.Gap, ending at
	// Event.At.
	Pause
	// Announced: By sent a gratuitous ARP / unsolicited NA for the
	// address to everyone.
	Announced
	// Heard: By answered this node's question of who answers (By ""
	// when the answer did not say).
	Heard
	// Asked: By asked who answers the address (an ARP probe, a
	// neighbour solicitation from its MAC).
	Asked
	// Notified: By announced the address to this node's MAC alone: it
	// lost the fence to this node and tells it so (TellWinner).
	Notified
	// GaveUp: By probed the address to this node's MAC alone: it won the
	// fence against this node and gave the address up (TellLoser).
	GaveUp
	// Healed: the member list sees a node alive again that it had seen
	// dead (a partition healed): both sides agree on the owners again.
	Healed
	// Tick: a time the machine asked to be woken at (Wake) has come. By
	// may name the host a fenced or deferred machine watches (By()), and
	// Speaker whether it still counts as another speaker's node.
	Tick
)

var kindNames = [...]string{"", "claim", "release", "drop", "pause", "announced", "heard", "asked", "notified", "gave-up", "healed", "tick"}

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
	// By is the MAC of the other host, in net.HardwareAddr String form.
	By      string
	Speaker bool
	// Gap is how long this process was not scheduled (Pause).
	Gap time.Duration
}

// Do is what an Action does.
type Do uint8

// The actions.
const (
	// AnswerOff: answer nothing for the address and advertise nothing,
	// until told otherwise.
	AnswerOff Do = iota + 1
	// AnswerOn: answer again, the requests received from this node's
	// next announcement on (the host that answered until then answers
	// those before: make-before-break).
	AnswerOn
	// AnswerNow: answer again at once (nobody else answers).
	AnswerNow
	// Announce: start a burst of gratuitous ARP / unsolicited NA
	// (GratuitousCount), as a new owner does.
	Announce
	// AnnounceOnce: send one gratuitous ARP / unsolicited NA now.
	AnnounceOnce
	// Reassert: announce again against a foreign claim: a burst, one at
	// a time (a host that repeats its claim gets one frame per claim).
	Reassert
	// Ask: ask who answers the address (an ARP probe / a neighbour
	// solicitation); the answers come back as Heard.
	Ask
	// Wake: feed a Tick at Action.At.
	Wake
	// Defer: back from a pause, the host To answers the address: answer
	// nothing until Action.At, or until lifted.
	Defer
	// Fence: lost the fence to the host To: answer and advertise
	// nothing until Action.At, or until lifted.
	Fence
	// Lift: a fence or deferral ends (Why: gone, gave-up, healed,
	// foreign, handed); counted and logged. An AnswerOn or AnswerNow
	// follows.
	Lift
	// Yield: a released address was taken over by To; answer nothing
	// more for it, report the hand-over.
	Yield
	// TellWinner: announce the address to To's MAC alone (this node
	// lost the fence to To, which may not have heard this node).
	TellWinner
	// TellLoser: probe the address to To's MAC alone (To lost the fence
	// to this node, which gave the address up or still answers it).
	TellLoser
	// Conflict: report a conflict with the speaker To (Why: won, lost).
	Conflict
	// Foreign: a host that is no speaker's node (To) claimed the address;
	// counted every time, reported (logged, an event) when Report.
	Foreign
	// Settling: another speaker (To) announced an address this node
	// claimed less than FenceSettle ago: a hand-over in progress, which
	// the releasing side ends; logged only.
	Settling
)

var doNames = [...]string{"", "answer-off", "answer-on", "answer-now", "announce", "announce-once", "reassert", "ask", "wake",
	"defer", "fence", "lift", "yield", "tell-winner", "tell-loser", "conflict", "foreign", "settling"}

func (d Do) String() string {
	if int(d) < len(doNames) && d != 0 {
		return doNames[d]
	}
	return fmt.Sprintf("do(%d)", uint8(d))
}

// Action is one output of a Machine.
type Action struct {
	Do Do
	// At is when to wake (Wake), or until when to stay silent (Defer,
	// Fence).
	At time.Time
	// To is the other host's MAC.
	To string
	// Why qualifies Lift and Conflict.
	Why string
	// Report: a Foreign claim to log and report (once per 2 × Refresh).
	Report bool
}

// Machine is the ownership machine of one address on one interface. The
// zero Machine is Idle with no pause detection; use New.
type Machine struct {
	cfg   Config
	phase Phase
	// by is the host deferred to, fenced for, or yielded to.
	by string

	// The pause: before is the phase it interrupted (Owner or
	// Releasing), while Asking; askUntil when the wait ends; askedAgain:
	// the second question went out; handing are the speakers heard
	// asking who answers the address since the pause: they give it up.
	before     Phase
	askUntil   time.Time
	askedAgain bool
	handing    map[string]bool

	// The fence. claimedAt is when the claim began or was renewed (a
	// lifted fence); quietUntil ends a fence or deferral; verifyAt is
	// when its verification asks next, askedAt when it asked (zero: no
	// question out); heardAt when another speaker (or a host that did
	// not say who it is) last answered or announced the address.
	claimedAt  time.Time
	quietUntil time.Time
	verifyAt   time.Time
	askedAt    time.Time
	heardAt    time.Time
	// beaten is the last speaker this node won the fence against while
	// owning the address: silent since, and told when this node gives
	// the address up. contested is the last speaker heard announcing the
	// address while owned here, at contestedAt.
	beaten      string
	contested   string
	contestedAt time.Time
	// When a conflict, a foreign claim, a winner's give-up and a told
	// loser were last handled (rate limits).
	conflictAt, foreignAt, gaveUpAt, toldLoserAt time.Time

	// The release: when it began, and how many of ReleaseAsks went out.
	releasedAt time.Time
	asks       int
}

// New returns an Idle Machine.
func New(cfg Config) Machine { return Machine{cfg: cfg.withDefaults()} }

// NewIn returns a Machine already in phase p (Owner or Releasing): one
// created for an address that was announced before the machine existed.
// Its claim counts as settled.
func NewIn(cfg Config, p Phase) Machine { return Machine{cfg: cfg.withDefaults(), phase: p} }

// Configure replaces the machine's configuration (the announcer's timing
// changed); its state stays.
func (m *Machine) Configure(cfg Config) { m.cfg = cfg.withDefaults() }

// Phase is the machine's phase.
func (m *Machine) Phase() Phase { return m.phase }

// By is the host deferred to, fenced for or yielded to ("" when none).
func (m *Machine) By() string { return m.by }

// Beaten is the last speaker this node won the fence against while
// owning the address ("" when none).
func (m *Machine) Beaten() string { return m.beaten }

// HeardAt is when another speaker was last heard answering or announcing
// the address (zero: never).
func (m *Machine) HeardAt() time.Time { return m.heardAt }

// Silent reports whether the address is answered by nobody here because
// of the machine: it asks who answers, defers, is fenced, or yielded.
func (m *Machine) Silent() bool {
	switch m.phase {
	case Asking, Deferred, Yielded, Fenced:
		return true
	}
	return false
}

// Watching reports whether the machine is silent for a host it watches
// (fenced or deferred), at now.
func (m *Machine) Watching(now time.Time) bool {
	return (m.phase == Fenced || m.phase == Deferred) && now.Before(m.quietUntil)
}

// Step applies one event and returns the actions to take, in order.
func (m *Machine) Step(ev Event) []Action {
	m.expire(ev.At)
	switch ev.Kind {
	case Claim:
		return m.claim(ev)
	case Release:
		return m.release(ev)
	case Drop:
		return m.drop()
	case Pause:
		return m.pause(ev)
	case Announced:
		return m.announced(ev)
	case Heard:
		return m.heard(ev)
	case Asked:
		return m.asked(ev)
	case Notified:
		return m.notified(ev)
	case GaveUp:
		return m.gaveUp(ev)
	case Healed:
		return m.healed(ev)
	case Tick:
		return m.tick(ev)
	}
	return nil
}

// expire ends a fence or deferral whose time has passed: the winner was
// not heard for 2 × Refresh, and the address is answered here again (the
// silence was only ever until then).
func (m *Machine) expire(now time.Time) {
	if (m.phase == Fenced || m.phase == Deferred) && !now.Before(m.quietUntil) {
		m.toOwner(m.claimedAt)
	}
}

// toOwner makes the machine an owner whose claim began at claimed, with
// no fence or deferral.
func (m *Machine) toOwner(claimed time.Time) {
	m.phase, m.by, m.handing = Owner, "", nil
	m.claimedAt, m.quietUntil, m.verifyAt, m.askedAt = claimed, time.Time{}, time.Time{}, time.Time{}
}

// tick: a time asked for has come.
func (m *Machine) tick(ev Event) []Action {
	switch m.phase {
	case Asking:
		return m.askTick(ev)
	case Releasing:
		return m.releaseTick(ev)
	case Fenced, Deferred:
		return m.verifyTick(ev)
	}
	return nil
}
