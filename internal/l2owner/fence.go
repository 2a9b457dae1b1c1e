package l2owner

import (
	"bytes"
	"hash/fnv"
	"net"
	"net/netip"
	"time"
)

// Wins says whether the host with MAC ours keeps addr when the host with
// MAC theirs announces it too (both speakers' nodes): the split-brain
// fence. Both sides compute the same answer without talking: the higher
// rendezvous weight of (MAC, address) wins, ties (a 64-bit collision) to
// the smaller MAC. The weight varies with the address, so the addresses
// of a split brain are spread between the two sides, not all given to
// one.
func Wins(addr netip.Addr, ours, theirs net.HardwareAddr) bool {
	a, b := macWeight(ours, addr), macWeight(theirs, addr)
	if a != b {
		return a > b
	}
	return bytes.Compare(ours, theirs) < 0
}

func macWeight(mac net.HardwareAddr, addr netip.Addr) uint64 {
	h := fnv.New64a()
	h.Write(mac)
	b := addr.As16()
	h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
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
