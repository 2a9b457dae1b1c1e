package l2owner

import "time"

// Claims and releases: make-before-break.

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

// ReleaseEnds says whether the release of an address that began at since
// ends at now: it ends when the address has no new owner any more (nobody
// to hand it to: answering on would only delay the next decision), when
// the new owner took it over (this machine yielded to it), or when grace
// (ReleaseGrace unless the operator set another) ran out. A release that
// goes on ends at the latest at the time returned.
func ReleaseEnds(since, now time.Time, grace time.Duration, hasNewOwner, takenOver bool) (done bool, latest time.Time) {
	latest = since.Add(grace)
	return !hasNewOwner || takenOver || !now.Before(latest), latest
}
