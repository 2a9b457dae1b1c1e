package bgp

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	bgppkt "github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// Session states as Sessions reports them.
const (
	stateIdle          = "Idle"
	stateEstablished   = "Established"
	stateNotConfigured = "NotConfigured"
)

// sessionStatus is what the speaker knows about one desired session
// between calls to GoBGP.
type sessionStatus struct {
	session     Session // normalized; zero when refused
	configured  bool
	state       string
	up          bool
	since       time.Time
	lastDown    string
	lastConnErr string
	// ownReset: the speaker reset the session itself (a hard reset it
	// asked GoBGP for) and its down transition is still to come.
	ownReset bool
	err      string
	peerASN  uint32 // the router's AS at the last Established
	refused  string // why the router was last refused; cleared when up
	warnings []string
}

// statusTable is shared by Apply, the GoBGP watch goroutine and Sessions.
type statusTable struct {
	mu     sync.Mutex
	byName map[string]*sessionStatus
	byAddr map[netip.Addr]string // configured sessions only
}

func newStatusTable() *statusTable {
	return &statusTable{byName: map[string]*sessionStatus{}, byAddr: map[netip.Addr]string{}}
}

// configure records a session as configured in GoBGP. A session configured
// anew (or recreated) starts over in Idle.
func (t *statusTable) configure(s Session, fresh bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.byName[s.Name]
	if st == nil || fresh {
		prev := st
		st = &sessionStatus{state: stateIdle, since: now}
		if prev != nil {
			st.lastDown, st.peerASN = prev.lastDown, prev.peerASN
		}
		t.byName[s.Name] = st
	}
	st.session, st.configured, st.err = s, true, ""
	t.byAddr[s.PeerAddress] = s.Name
}

// refuse records a session GoBGP does not hold, with the reason.
// An unnumbered session keeps its interface (and its peer address, if
// one was learnt) in the status.
func (t *statusTable) refuse(name string, r refusal, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := Session{Name: name, PeerAddress: r.peer, Interface: r.iface}
	t.byName[name] = &sessionStatus{session: ss, state: stateNotConfigured, since: now, err: r.err.Error()}
}

// forget drops a session that left GoBGP (deleted or recreated) and
// returns its status as it was, so a Down event can be sent if it was up.
func (t *statusTable) forget(s Session) sessionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byAddr[s.PeerAddress] == s.Name {
		delete(t.byAddr, s.PeerAddress)
	}
	st := t.byName[s.Name]
	if st == nil {
		return sessionStatus{}
	}
	old := *st
	st.configured, st.up, st.state = false, false, stateIdle
	return old
}

// prune drops every name not in keep.
func (t *statusTable) prune(keep map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for n := range t.byName {
		if !keep[n] {
			delete(t.byName, n)
		}
	}
}

func (t *statusTable) setWarnings(w *warnings) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for n, st := range t.byName {
		st.warnings = w.lines(n)
	}
}

// transition is a change of a session's Established state seen by the watch.
type transition struct {
	session Session
	up      bool
}

// peerState records a state reported by GoBGP for a neighbor address and
// returns the transition it makes, if any.
func (t *statusTable) peerState(addr netip.Addr, state string, reason string, asn uint32, now time.Time) (transition, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.sessionAt(addr)
	if st == nil {
		return transition{}, false
	}
	if st.state != state {
		st.state, st.since = state, now
	}
	up := state == stateEstablished
	if up == st.up {
		return transition{}, false
	}
	st.up = up
	if up {
		st.lastConnErr, st.refused, st.peerASN = "", "", asn
	} else {
		st.lastDown = reason
	}
	return transition{session: st.session, up: up}, true
}

// refuseRouter records why the router at addr was refused.
func (t *statusTable) refuseRouter(addr netip.Addr, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.sessionAt(addr); st != nil {
		st.refused = why
	}
}

// sessionFor returns the configured session at addr.
func (t *statusTable) sessionFor(addr netip.Addr) (Session, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.sessionAt(addr); st != nil && st.configured {
		return st.session, true
	}
	return Session{}, false
}

// markOwnReset notes that the speaker is about to reset the session at
// addr itself, so that its coming down transition is not taken for BFD's.
func (t *statusTable) markOwnReset(addr netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.sessionAt(addr); st != nil {
		st.ownReset = true
	}
}

// takeOwnReset reports and clears markOwnReset's note.
func (t *statusTable) takeOwnReset(addr netip.Addr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.sessionAt(addr)
	if st == nil || !st.ownReset {
		return false
	}
	st.ownReset = false
	return true
}

// setDownReason replaces the reason of the last down transition (BFD).
func (t *statusTable) setDownReason(addr netip.Addr, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.sessionAt(addr); st != nil {
		st.lastDown = reason
	}
}

func (t *statusTable) connError(addr netip.Addr, err string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.sessionAt(addr); st != nil && !st.up {
		st.lastConnErr = err
	}
}

func (t *statusTable) sessionAt(addr netip.Addr) *sessionStatus {
	name, ok := t.byAddr[addr]
	if !ok {
		return nil
	}
	return t.byName[name]
}

// snapshot copies every status, sorted by name.
func (t *statusTable) snapshot() []sessionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]sessionStatus, 0, len(t.byName))
	for _, n := range sortedKeys(t.byName) {
		st := *t.byName[n]
		st.warnings = slices.Clone(st.warnings)
		out = append(out, st)
	}
	return out
}

// stateName names a GoBGP FSM state.
func stateName(st bgppkt.FSMState) string {
	switch st {
	case bgppkt.BGP_FSM_CONNECT:
		return "Connect"
	case bgppkt.BGP_FSM_ACTIVE:
		return "Active"
	case bgppkt.BGP_FSM_OPENSENT:
		return "OpenSent"
	case bgppkt.BGP_FSM_OPENCONFIRM:
		return "OpenConfirm"
	case bgppkt.BGP_FSM_ESTABLISHED:
		return stateEstablished
	}
	return stateIdle
}
