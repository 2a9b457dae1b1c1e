package statusview

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/installation"
)

// speakerReports reads the speakers' SpeakerStatuses (one per node and
// installation, named after the node): every address a node answers for in L2 mode ("l2 on
// <interfaces>") and every host prefix it sends on an established BGP
// session ("bgp to <peers>"). An object that does not decode is reported
// by name with no address, and a note.
func speakerReports(objs []map[string]any) (map[string][]Announced, []SpeakerLine, []string) {
	out := map[string][]Announced{}
	var lines []SpeakerLine
	var notes []string
	for _, o := range objs {
		var ss v1beta1.SpeakerStatus
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &ss); err != nil {
			md, _ := o["metadata"].(map[string]any)
			notes = append(notes, fmt.Sprintf("SpeakerStatus %v does not decode: %v", md["name"], err))
			continue
		}
		// one line per object (a second installation's is <node>.<name>);
		// what it announces, under its node
		lines = append(lines, SpeakerLine{Node: ss.Name, Pod: ss.Status.Pod, Summary: ss.Status.Summary, Truncated: ss.Status.Truncated, Draining: ss.Status.Draining})
		node := speakerNode(&ss)
		for _, a := range ss.Status.L2 {
			if ip, ok := parseAddress(a.Address); ok {
				out[node] = append(out[node], Announced{IP: ip, How: "l2 on " + strings.Join(a.Interfaces, ",")})
			}
		}
		peers := map[netip.Addr][]string{}
		for _, b := range ss.Status.BGP {
			for _, p := range b.Prefixes {
				if ip, ok := parseAddress(p); ok {
					peers[ip] = append(peers[ip], b.Peer)
				}
			}
		}
		for ip, ps := range peers {
			sort.Strings(ps)
			out[node] = append(out[node], Announced{IP: ip, How: "bgp to " + strings.Join(ps, ",")})
		}
		sort.SliceStable(out[node], func(i, j int) bool {
			if out[node][i].IP != out[node][j].IP {
				return out[node][i].IP.Less(out[node][j].IP)
			}
			return out[node][i].How < out[node][j].How
		})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Node < lines[j].Node })
	return out, lines, notes
}

// speakerNode is the node of a SpeakerStatus: its name, without the
// ".<installation>" of an installation's other than the default.
func speakerNode(ss *v1beta1.SpeakerStatus) string {
	inst, ok := ss.Labels[v1beta1.LabelInstallation]
	if !ok {
		return ss.Name
	}
	if node, ok := installation.Name(inst).Node(ss.Name); ok {
		return node
	}
	return ss.Name
}

// parseAddress accepts an address or a host prefix (/32, /128).
func parseAddress(s string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip, true
	}
	if p, err := netip.ParsePrefix(s); err == nil && p.IsSingleIP() {
		return p.Addr(), true
	}
	return netip.Addr{}, false
}

// eventAnnouncers reads the speakers' events per Service: for each
// address, the node of its newest NodeAssigned (L2 has one owner per
// address; a Service's addresses may be spread), and every node that sent a
// BGPAdvertised (BGP: several nodes advertise; a withdrawal sends no event).
func eventAnnouncers(events []corev1.Event) map[string][]Announcer {
	sorted := append([]corev1.Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return eventTime(sorted[i]).Before(eventTime(sorted[j])) })
	l2 := map[string]map[netip.Addr]string{} // by Service, the last node of each address
	bgp := map[string]map[string]bool{}
	for _, e := range sorted {
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		switch e.Reason {
		case "NodeAssigned":
			n := between(e.Message, "from node ", " on ")
			ip, ok := parseAddress(between(e.Message, "announcing ", " from node "))
			if n != "" && ok {
				if l2[key] == nil {
					l2[key] = map[netip.Addr]string{}
				}
				l2[key][ip] = n
			}
		case "BGPAdvertised":
			if n := between(e.Message, "node ", " advertises"); n != "" {
				if bgp[key] == nil {
					bgp[key] = map[string]bool{}
				}
				bgp[key][n] = true
			}
		}
	}
	out := map[string][]Announcer{}
	for key, byIP := range l2 {
		for _, ip := range slices.SortedFunc(maps.Keys(byIP), netip.Addr.Compare) {
			out[key] = append(out[key], Announcer{Node: byIP[ip], How: "l2, last NodeAssigned event", IP: ip})
		}
	}
	for key, nodes := range bgp {
		for _, n := range sortedKeys(nodes) {
			out[key] = append(out[key], Announcer{Node: n, How: "bgp, BGPAdvertised event"})
		}
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	n, _, ok := strings.Cut(rest, end)
	if !ok {
		return ""
	}
	return n
}
