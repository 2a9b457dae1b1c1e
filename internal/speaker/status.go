package speaker

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
)

// l2Entry is one address this node answers for, as the status shows it.
type l2Entry struct {
	IP         netip.Addr
	Interfaces []string
	Since      time.Time
}

// buildStatus turns what this node announces into its SpeakerStatus:
// the L2 addresses that have an interface (sorted), and every BGP session
// with the prefixes of routes sent to it while it is Established. Times
// are kept to the second, as the API stores them, so that an unchanged
// announcement compares equal after a round trip.
func buildStatus(pod string, l2 []l2Entry, sessions []bgp.SessionState, routes []announce.Route) v1beta1.SpeakerStatusStatus {
	st := v1beta1.SpeakerStatusStatus{Pod: pod}
	slices.SortFunc(l2, func(a, b l2Entry) int { return a.IP.Compare(b.IP) })
	for _, e := range l2 {
		if len(e.Interfaces) == 0 {
			continue // owned but not answered: no usable interface
		}
		st.Summary.L2Addresses++
		if len(st.L2) == v1beta1.MaxSpeakerL2Addresses {
			st.Truncated = true
			continue
		}
		ifaces := slices.Clone(e.Interfaces)
		slices.Sort(ifaces)
		st.L2 = append(st.L2, v1beta1.L2AnnouncementStatus{Address: e.IP.String(), Interfaces: slices.Compact(ifaces), Since: second(e.Since)})
	}
	byPeer := map[string][]string{}
	for _, r := range routes {
		for _, p := range r.Peers {
			byPeer[p] = append(byPeer[p], r.Prefix.String())
		}
	}
	sessions = slices.Clone(sessions)
	slices.SortFunc(sessions, func(a, b bgp.SessionState) int { return strings.Compare(a.Name, b.Name) })
	prefixes := map[string]bool{}
	up := 0
	for _, s := range sessions {
		if len(st.BGP) == v1beta1.MaxSpeakerSessions {
			st.Truncated = true
			break
		}
		bs := v1beta1.BGPSessionStatus{Peer: s.Name, Interface: s.Interface, State: s.State, PeerASN: int64(s.PeerASN), Message: sessionMessage(s)}
		if s.Peer.IsValid() {
			// An unnumbered session's interface is in its own field.
			bs.PeerAddress = s.Peer.WithZone("").String()
		}
		if !s.Since.IsZero() {
			t := second(s.Since)
			bs.Since = &t
		}
		if s.State == "Established" {
			up++
			ps := slices.Compact(slices.Sorted(slices.Values(byPeer[s.Name])))
			for _, p := range ps {
				prefixes[p] = true
			}
			if len(ps) > v1beta1.MaxSessionPrefixes {
				ps, st.Truncated = ps[:v1beta1.MaxSessionPrefixes], true
			}
			bs.Prefixes = ps
		}
		st.BGP = append(st.BGP, bs)
	}
	st.Summary.Sessions = fmt.Sprintf("%d/%d", up, len(sessions))
	st.Summary.Prefixes = int32(len(prefixes))
	return st
}

// sessionMessage is why a session is not up, when the speaker knows: its
// configuration was refused, or its router was (its AS number). Connect
// errors change at every attempt and stay out of the status.
func sessionMessage(s bgp.SessionState) string {
	m := cmp.Or(s.Error, s.Refused)
	if len(m) > 512 {
		m = m[:509] + "..."
	}
	return m
}

func second(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second).UTC()) }
