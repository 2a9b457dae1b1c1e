package bgp

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
)

// errNoRouterID is returned for every session when the speaker cannot pick a
// router ID.
var errNoRouterID = errors.New("no router ID: the node has no IPv4 address and no session sets routerID")

// sessionPlan is what Apply must do to GoBGP's neighbors. Deletions run
// first, then updates, then additions, so a peer address can move from one
// session to another in a single Apply.
type sessionPlan struct {
	remove  []Session          // configured sessions to delete, in their configured form
	update  []Session          // changed in place (UpdatePeer): no session reset
	add     []Session          // new sessions, and the new form of recreated ones
	keep    []Session          // unchanged
	refused map[string]refusal // by session name: not configured, with the reason
}

// refusal is why a desired session is not configured.
type refusal struct {
	peer  netip.Addr
	iface string // an unnumbered session's interface
	err   error
}

func refusalOf(s Session, err error) refusal {
	return refusal{peer: s.PeerAddress, iface: s.Interface, err: err}
}

// routerIDFor picks the server's router ID: the node's IPv4 address, or for an
// IPv6-only node the routerID of the first session (by name) that sets one.
func routerIDFor(d Desired) netip.Addr {
	if v4 := d.NodeIPv4.Unmap(); v4.Is4() {
		return v4
	}
	ss := slices.Clone(d.Sessions)
	slices.SortFunc(ss, func(a, b Session) int { return cmp.Compare(a.Name, b.Name) })
	for _, s := range ss {
		if id := s.RouterID.Unmap(); id.Is4() {
			return id
		}
	}
	return netip.Addr{}
}

// planSessions diffs the configured sessions against the desired ones.
func planSessions(current map[string]Session, desired []Session, routerID netip.Addr) sessionPlan {
	p := sessionPlan{refused: map[string]refusal{}}
	valid := p.validate(desired, routerID)
	winners := p.resolveAddresses(current, valid)
	for _, s := range winners {
		cur, ok := current[s.Name]
		switch {
		case !ok:
			p.add = append(p.add, s)
		case reflect.DeepEqual(cur, s):
			p.keep = append(p.keep, s)
		case needsRecreate(cur, s):
			p.remove = append(p.remove, cur)
			p.add = append(p.add, s)
		default:
			p.update = append(p.update, s)
		}
	}
	names := sortedKeys(current)
	for _, n := range names {
		if !slices.ContainsFunc(winners, func(s Session) bool { return s.Name == n }) {
			p.remove = append(p.remove, current[n])
		}
	}
	return p
}

// validate normalizes the desired sessions, sorted by name, and refuses the
// invalid ones, repeated names and foreign router IDs.
func (p *sessionPlan) validate(desired []Session, routerID netip.Addr) []Session {
	ss := slices.Clone(desired)
	slices.SortStableFunc(ss, func(a, b Session) int { return cmp.Compare(a.Name, b.Name) })
	var out []Session
	for i, s := range ss {
		if i > 0 && ss[i-1].Name == s.Name {
			p.refused[s.Name] = refusalOf(s, fmt.Errorf("session %q is listed twice", s.Name))
			continue
		}
		n, err := normalize(s)
		if err != nil {
			p.refused[s.Name] = refusalOf(s, err)
			continue
		}
		if !routerID.IsValid() {
			p.refused[s.Name] = refusalOf(s, errNoRouterID)
			continue
		}
		if n.RouterID.IsValid() && n.RouterID != routerID {
			p.refused[s.Name] = refusalOf(s, fmt.Errorf("routerID %s differs from this speaker's router ID %s: "+
				"per-session router IDs are not supported (GoBGP has one router ID per server)", n.RouterID, routerID))
			continue
		}
		out = append(out, n)
	}
	// A duplicate name refuses every session of that name, so that the
	// outcome does not depend on input order.
	return slices.DeleteFunc(out, func(s Session) bool { _, dup := p.refused[s.Name]; return dup })
}

// refusePassive refuses the passive sessions to be added: the server has
// no listener for them.
func (p *sessionPlan) refusePassive(err error) {
	p.add = slices.DeleteFunc(p.add, func(s Session) bool {
		if s.Passive {
			p.refused[s.Name] = refusalOf(s, err)
		}
		return s.Passive
	})
}

// resolveAddresses keeps one session per peer address (GoBGP keys neighbors
// by address): the one already configured with it, else the first by name.
func (p *sessionPlan) resolveAddresses(current map[string]Session, valid []Session) []Session {
	owner := map[netip.Addr]string{}
	for _, s := range valid {
		if cur, ok := current[s.Name]; ok && cur.PeerAddress == s.PeerAddress {
			owner[s.PeerAddress] = s.Name
		}
	}
	var out []Session
	for _, s := range valid {
		o, taken := owner[s.PeerAddress]
		if taken && o != s.Name {
			p.refused[s.Name] = refusalOf(s, fmt.Errorf("peer address %s is already used by session %q: "+
				"one BGP session per peer address", s.PeerAddress, o))
			continue
		}
		owner[s.PeerAddress] = s.Name
		out = append(out, s)
	}
	return out
}

// needsRecreate tells whether going from old to new needs the neighbor
// deleted and added again. Only the connect retry timer and BFD change in
// place (next hops are policy, not neighbor config, and FamiliesChosen,
// which GoBGP never sees); everything else is sent in the OPEN message or
// fixed at connect time (GoBGP would reset the session for those anyway,
// and would apply new hold and keepalive times only at the next session).
func needsRecreate(old, new Session) bool {
	old.ConnectTime, new.ConnectTime = 0, 0
	old.BFD, new.BFD = nil, nil
	old.FamiliesChosen, new.FamiliesChosen = false, false
	// Next hops are export policy, applied with the paths.
	old.NextHopV4, new.NextHopV4 = netip.Addr{}, netip.Addr{}
	old.NextHopV6, new.NextHopV6 = netip.Addr{}, netip.Addr{}
	return !reflect.DeepEqual(old, new)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
