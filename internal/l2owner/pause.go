package l2owner

import "time"

// The pause rule.

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
