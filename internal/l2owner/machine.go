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

// claim: the decision lists the address as owned. A new or taken-over
// address is claimed: answered from its announcement on; one still
// answered here (releasing) goes on being answered and is announced. One
// asked about stays so (the pause rule decides).
func (m *Machine) claim(ev Event) []Action {
	switch m.phase {
	case Idle, Yielded:
		m.toOwner(ev.At)
		m.beaten, m.contested = "", ""
		return []Action{{Do: AnswerOn}, {Do: Announce}}
	case Releasing:
		m.toOwner(ev.At)
		return []Action{{Do: Announce}}
	case Asking:
		m.before = Owner
	}
	return nil
}

// release: the decision hands the address over. The speaker this node
// beat in the fence is told (it was silent since, and answers again); an
// address fenced or deferred is handed over already (the other host
// answers it); one whose new owner was heard announcing it within
// ContestedMemory is yielded to it at once; otherwise it is answered
// until the new owner shows itself, and this node asks who answers it
// (ReleaseAsks).
func (m *Machine) release(ev Event) []Action {
	var acts []Action
	switch m.phase {
	case Idle:
		m.phase, m.releasedAt, m.asks = Releasing, ev.At, len(ReleaseAsks)
		return nil
	case Asking:
		m.before = Releasing
		return nil
	case Owner, Fenced, Deferred:
	default:
		return nil
	}
	if m.beaten != "" {
		acts = append(acts, Action{Do: TellLoser, To: m.beaten})
	}
	contested := m.contested != "" && ev.At.Sub(m.contestedAt) <= ContestedMemory && m.contested != m.beaten
	switch {
	case m.phase == Fenced || m.phase == Deferred:
		acts = append(acts, m.yield(m.by)...)
	case contested:
		acts = append(acts, m.yield(m.contested)...)
	default:
		m.phase, m.by, m.releasedAt, m.asks = Releasing, "", ev.At, 1
		acts = append(acts, Action{Do: Ask}, Action{Do: Wake, At: ev.At.Add(ReleaseAsks[1])})
	}
	m.beaten, m.contested = "", ""
	return acts
}

// yield: the address, released, is answered by to.
func (m *Machine) yield(to string) []Action {
	m.phase, m.by, m.handing = Yielded, to, nil
	m.quietUntil, m.verifyAt, m.askedAt = time.Time{}, time.Time{}, time.Time{}
	return []Action{{Do: Yield, To: to}}
}

// drop: no longer announced here. A speaker beaten in the fence is told
// this node gave the address up.
func (m *Machine) drop() []Action {
	var acts []Action
	if m.beaten != "" && m.phase != Releasing && m.phase != Yielded {
		acts = append(acts, Action{Do: TellLoser, To: m.beaten})
	}
	*m = Machine{cfg: m.cfg}
	return acts
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

// announced: another host announced the address to everyone. A released
// address is yielded to it (make-before-break: it answers already).
// Asking, a speaker's announcement is its answer (the pause rule). Owned,
// a speaker's is remembered (ContestedMemory) and fenced; any other
// host's is a foreign claim.
func (m *Machine) announced(ev Event) []Action {
	if ev.By == "" {
		return nil
	}
	switch m.phase {
	case Asking:
		return m.answerWhileAsking(ev)
	case Releasing:
		return m.yield(ev.By)
	case Owner, Fenced, Deferred:
		if ev.Speaker {
			m.heardAt = ev.At
			m.contested, m.contestedAt = ev.By, ev.At
		}
		return m.fence(ev)
	}
	return nil
}

// fence resolves two owners of the address without talking: Wins ranks
// the two MACs, both sides compute the same. The loser (once its claim
// has settled: a younger one is a hand-over in progress, which the
// releasing side ends) answers and advertises nothing for 2 × Refresh
// after it last heard the winner, and verifies every FenceVerify that the
// winner still answers; it tells the winner once (TellWinner). The winner
// announces the address at once so that clients point at it, and
// remembers the loser (TellLoser when it gives the address up). Each
// conflict is reported once per 2 × Refresh. Only a speaker's node can
// win: any other host's claim is a foreign claim.
func (m *Machine) fence(ev Event) []Action {
	if !ev.Speaker {
		return m.foreign(ev)
	}
	won := Wins(m.cfg.Addr, m.cfg.MAC, mac(ev.By))
	if !won && ev.At.Sub(m.claimedAt) < m.cfg.FenceSettle {
		return []Action{{Do: Settling, To: ev.By}}
	}
	hold := m.cfg.hold()
	var acts []Action
	switch {
	case !won && hold > 0:
		if m.phase == Owner {
			m.phase = Fenced
		}
		if m.phase == Fenced {
			m.by = ev.By
		}
		m.quietUntil = ev.At.Add(hold)
		acts = append(acts, Action{Do: Fence, To: ev.By, At: m.quietUntil})
		if m.verifyAt.IsZero() && m.askedAt.IsZero() {
			m.verifyAt = ev.At.Add(m.cfg.FenceVerify)
			acts = append(acts, Action{Do: Wake, At: m.verifyAt})
		}
	case won:
		m.beaten = ev.By
		acts = append(acts, Action{Do: AnnounceOnce})
	}
	if !m.conflictAt.IsZero() && ev.At.Sub(m.conflictAt) < hold {
		m.conflictAt = ev.At
		return acts // the same conflict, reported already
	}
	m.conflictAt = ev.At
	if won {
		return append(acts, Action{Do: Conflict, To: ev.By, Why: "won"})
	}
	return append(acts, Action{Do: TellWinner, To: ev.By}, Action{Do: Conflict, To: ev.By, Why: "lost"})
}

// foreign: a host that is no speaker's node claims the address. This
// node keeps answering and announces it again (Reassert), so that the
// clients that took the claim point here again; the claim is counted
// every time and reported once per 2 × Refresh.
func (m *Machine) foreign(ev Event) []Action {
	report := m.foreignAt.IsZero() || ev.At.Sub(m.foreignAt) >= m.cfg.hold()
	if report {
		m.foreignAt = ev.At
	}
	return []Action{{Do: Reassert}, {Do: Foreign, To: ev.By, Report: report}}
}

// heard: another host answered this node's question. Asking, a speaker's
// answer is deferred to (the pause rule); releasing, the host that
// answers has taken the address over; owned (or fenced), a speaker's
// answer keeps a fence up (a host that runs no speaker keeps none up).
func (m *Machine) heard(ev Event) []Action {
	switch m.phase {
	case Asking:
		return m.answerWhileAsking(ev)
	case Releasing:
		if ev.By != "" {
			return m.yield(ev.By)
		}
	case Owner, Fenced, Deferred:
		if ev.By == "" || ev.Speaker {
			m.heardAt = ev.At
		}
	}
	return nil
}

// answerWhileAsking: back from a pause, a speaker answers or announces
// the address: that node answers now. A released address is yielded to
// it; an owned one deferred to it, unless it was heard giving the address
// up: then this node claims it. Other hosts are ignored: only a speaker
// can have taken the address over.
func (m *Machine) answerWhileAsking(ev Event) []Action {
	if !ev.Speaker || ev.By == "" {
		return nil
	}
	if m.before == Releasing {
		return m.yield(ev.By)
	}
	if m.handing[ev.By] {
		return m.claimBack(ev.At)
	}
	m.phase, m.by, m.handing = Deferred, ev.By, nil
	m.heardAt = ev.At
	m.quietUntil = ev.At.Add(m.deferHold())
	m.verifyAt, m.askedAt = ev.At.Add(m.cfg.FenceVerify), time.Time{}
	return []Action{{Do: Defer, To: ev.By, At: m.quietUntil}, {Do: Wake, At: m.verifyAt}}
}

// deferHold is how long a deferral lasts after the host was last heard:
// as a lost fence, 2 × Refresh (or 2 × the default when nobody
// refreshes: a deferral must end).
func (m *Machine) deferHold() time.Duration {
	if h := m.cfg.hold(); h > 0 {
		return h
	}
	return 2 * Refresh
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
			return append([]Action{{Do: Lift, Why: "handed"}}, m.claimBack(ev.At)...)
		}
	case Asking:
		if m.handing == nil {
			m.handing = map[string]bool{}
		}
		m.handing[ev.By] = true
	}
	return nil
}

// claimBack claims the address as its owner after a pause: answer the
// requests received from its announcement on, and announce it (a burst:
// a client that cached the other host's answer within its ARP locktime
// ignores a single announcement). The host that answered until then
// answers those received before, and stops when it reads the
// announcement (make-before-break).
func (m *Machine) claimBack(at time.Time) []Action {
	m.toOwner(at)
	return []Action{{Do: AnswerOn}, {Do: Announce}}
}

// notified: a speaker that lost the fence to this node tells it. Owned,
// it is a conflict like another (this node may not have heard the
// loser's own announcements). Releasing, that speaker lost to this
// node's claim, read after the claim had turned releasing: tell it at
// once that this node gave the address up (TellLoser, at most once per
// FenceVerify), so that it answers again and this node yields to its
// announcement.
func (m *Machine) notified(ev Event) []Action {
	if ev.By == "" {
		return nil
	}
	switch m.phase {
	case Owner, Fenced, Deferred:
		return m.fence(ev)
	case Releasing:
		if m.toldLoserAt.IsZero() || ev.At.Sub(m.toldLoserAt) >= m.cfg.FenceVerify {
			m.toldLoserAt = ev.At
			return []Action{{Do: TellLoser, To: ev.By}}
		}
	}
	return nil
}

// gaveUp: the winner of the fence tells this node it gave the address up.
// Fenced for that host, the fence is lifted: answered from this node's
// announcement on, and the claim counts as new (the winner may still own
// it for a moment, and must not win the fence again at once). Owned and
// answered already, the address is announced again (at most once per
// FenceVerify), for the winner, releasing, to yield to.
func (m *Machine) gaveUp(ev Event) []Action {
	switch m.phase {
	case Fenced, Deferred:
		if ev.By != m.by {
			return nil
		}
		m.toOwner(ev.At)
		return []Action{{Do: Lift, Why: "gave-up"}, {Do: AnswerOn}, {Do: AnnounceOnce}}
	case Owner:
		if m.gaveUpAt.IsZero() || ev.At.Sub(m.gaveUpAt) >= m.cfg.FenceVerify {
			m.gaveUpAt = ev.At
			return []Action{{Do: AnnounceOnce}}
		}
	}
	return nil
}

// healed: the member list healed; every fence lost is lifted and its
// address announced again. Both sides agree on the owners again: a
// winner that now hands the address over hears this node at once and
// stops, make-before-break. The lifted claim counts as new (FenceSettle):
// the winner may see the heal a moment later and announce once more.
func (m *Machine) healed(ev Event) []Action {
	if m.phase != Fenced && m.phase != Deferred {
		return nil
	}
	m.toOwner(ev.At)
	return []Action{{Do: Lift, Why: "healed"}, {Do: AnswerOn}, {Do: AnnounceOnce}}
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

// askTick: while asking, ask a second time halfway (a question or its
// answer may be lost), and when AskFor has passed with no speaker heard,
// nobody took the address over: answer it again.
func (m *Machine) askTick(ev Event) []Action {
	if ev.At.Before(m.askUntil) {
		if m.askedAgain {
			return nil
		}
		m.askedAgain = true
		return []Action{{Do: Ask}, {Do: Wake, At: m.askUntil}}
	}
	if m.before == Releasing {
		m.phase = Releasing
		m.asks = len(ReleaseAsks)
		return []Action{{Do: AnswerNow}}
	}
	return m.claimBack(ev.At)
}

// releaseTick asks again who answers a released address still answered
// here, at each of ReleaseAsks.
func (m *Machine) releaseTick(ev Event) []Action {
	if m.asks >= len(ReleaseAsks) || ev.At.Before(m.releasedAt.Add(ReleaseAsks[m.asks])) {
		return nil
	}
	m.asks++
	acts := []Action{{Do: Ask}}
	if m.asks < len(ReleaseAsks) {
		acts = append(acts, Action{Do: Wake, At: m.releasedAt.Add(ReleaseAsks[m.asks])})
	}
	return acts
}

// verifyTick is the fence's verification: every FenceVerify, ask who
// answers the address; when no speaker answered or announced it within
// half of that, the winner has gone (it handed the address over, or
// stopped, without this node hearing of it): answer again at once.
// Without it both sides of a conflict can fall silent together (the
// winner yielding to the loser's last announcement). A winner that no
// longer counts as a speaker (a tick naming it, ev.Speaker false: the
// set of speakers became complete after the fence) is no winner: answer
// again.
func (m *Machine) verifyTick(ev Event) []Action {
	if ev.By != "" && ev.By == m.by && !ev.Speaker {
		m.toOwner(m.claimedAt)
		return []Action{{Do: Lift, Why: "foreign"}, {Do: AnswerNow}, {Do: AnnounceOnce}}
	}
	if m.askedAt.IsZero() {
		if ev.At.Before(m.verifyAt) {
			return nil
		}
		m.askedAt, m.verifyAt = ev.At, time.Time{}
		return []Action{{Do: Ask}, {Do: Wake, At: ev.At.Add(m.cfg.FenceVerify / 2)}}
	}
	if ev.At.Before(m.askedAt.Add(m.cfg.FenceVerify / 2)) {
		return nil
	}
	if !m.heardAt.Before(m.askedAt) {
		m.askedAt, m.verifyAt = time.Time{}, ev.At.Add(m.cfg.FenceVerify)
		return []Action{{Do: Wake, At: m.verifyAt}}
	}
	m.toOwner(m.claimedAt)
	return []Action{{Do: Lift, Why: "gone"}, {Do: AnswerNow}, {Do: AnnounceOnce}}
}

// mac parses a MAC in net.HardwareAddr String form (nil when it does not
// parse: it ranks as no MAC).
func mac(s string) net.HardwareAddr {
	m, _ := net.ParseMAC(s)
	return m
}
