package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

const defaultNeighborInterval = 2 * time.Second

// ErrNoInterface and ErrNoNeighbor are why an unnumbered session has no
// peer address; FindNeighbor implementations wrap them.
var (
	ErrNoInterface = errors.New("no such interface on this node")
	ErrNoNeighbor  = errors.New("no IPv6 link-local neighbour learnt on the interface")
)

// linkNeighbor is one entry of an interface's IPv6 neighbour table.
type linkNeighbor struct {
	addr   netip.Addr
	usable bool // false for failed and incomplete entries
}

// pickNeighbor chooses the peer of an unnumbered session among the IPv6
// neighbours of iface, as GoBGP's own resolution does: the one usable
// link-local neighbour that is not one of the interface's own addresses.
// It returns the address zoned with iface.
func pickNeighbor(iface string, neighbors []linkNeighbor, own []netip.Addr) (netip.Addr, error) {
	var found []netip.Addr
	for _, n := range neighbors {
		a := n.addr.WithZone("")
		if !n.usable || !a.Is6() || !a.IsLinkLocalUnicast() || slices.Contains(own, a) || slices.Contains(found, a) {
			continue
		}
		found = append(found, a)
	}
	slices.SortFunc(found, netip.Addr.Compare)
	switch len(found) {
	case 0:
		return netip.Addr{}, fmt.Errorf("interface %s: %w (the router must send Router Advertisements on it; "+
			"FRR does for \"neighbor %s interface\")", iface, ErrNoNeighbor, iface)
	case 1:
		return found[0].WithZone(iface), nil
	}
	names := make([]string, len(found))
	for i, a := range found {
		names[i] = a.String()
	}
	return netip.Addr{}, fmt.Errorf("interface %s has %d IPv6 link-local neighbours (%s): unnumbered peering needs a point-to-point link",
		iface, len(found), strings.Join(names, ", "))
}

// resolved is the outcome of looking up the neighbours of the unnumbered
// sessions: the sessions with their peer address, and the ones refused.
type resolved struct {
	sessions []Session
	refused  map[string]refusal
	key      string // what was found, to tell when it changes
}

// resolveInterfaces fills the peer address of every unnumbered session
// with find's answer for its interface; numbered sessions pass as they
// are. A session whose interface has no usable neighbour is refused.
func resolveInterfaces(desired []Session, find func(string) (netip.Addr, error)) resolved {
	type answer struct {
		addr netip.Addr
		err  error
	}
	r := resolved{refused: map[string]refusal{}}
	byIface := map[string]answer{}
	var key []string
	for _, s := range desired {
		if s.Interface == "" {
			r.sessions = append(r.sessions, s)
			continue
		}
		ans, seen := byIface[s.Interface]
		if !seen {
			ans.addr, ans.err = find(s.Interface)
			byIface[s.Interface] = ans
			if ans.err != nil {
				key = append(key, s.Interface+"!"+ans.err.Error())
			} else {
				key = append(key, s.Interface+"="+ans.addr.String())
			}
		}
		if ans.err != nil {
			r.refused[s.Name] = refusal{iface: s.Interface, err: ans.err}
			continue
		}
		s.PeerAddress = ans.addr
		r.sessions = append(r.sessions, s)
	}
	slices.Sort(key)
	r.key = strings.Join(key, ";")
	return r
}

// unnumbered reports whether some session names an interface.
func unnumbered(ss []Session) bool {
	return slices.ContainsFunc(ss, func(s Session) bool { return s.Interface != "" })
}

// watchNeighbors starts or stops, with s.mu held, the goroutine that looks
// up the unnumbered sessions' neighbours every neighborEvery: a neighbour
// learnt, lost or changed between two Applies re-applies the last desired
// state (a session refused for want of a neighbour is added, one whose
// neighbour is gone is removed).
func (s *Speaker) watchNeighbors(on bool) {
	switch {
	case on && s.watchStop == nil:
		s.watchStop = make(chan struct{})
		go s.neighborLoop(s.watchStop)
	case !on && s.watchStop != nil:
		close(s.watchStop)
		s.watchStop = nil
	}
}

func (s *Speaker) neighborLoop(stop <-chan struct{}) {
	t := time.NewTicker(s.neighborEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.recheckNeighbors(stop)
		}
	}
}

// recheckNeighbors re-applies the desired state when the neighbours found
// differ from those of the last apply.
func (s *Speaker) recheckNeighbors(stop <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-stop:
		return
	default:
	}
	d := s.want.desired()
	if s.closed || resolveInterfaces(d.Sessions, s.findNeighbor).key == s.neighbors {
		return
	}
	s.log.Info("unnumbered BGP neighbours changed: applying again")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.apply(ctx, d); err != nil {
		s.log.Debug("apply after a neighbour change", "error", err)
	}
}
