package statusview

import (
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// speakerReports reads the per-node status objects without knowing their
// schema: the node is spec.nodeName, status.nodeName or the object's name;
// every string under status that is an IP address (or a prefix of one
// address) is an address the node reports, labelled with the top-level
// status field it sits under ("l2", "bgp", ...).
func speakerReports(objs []map[string]any) map[string][]Announced {
	out := map[string][]Announced{}
	for _, o := range objs {
		node := nodeOf(o)
		status, _ := o["status"].(map[string]any)
		for _, key := range sortedKeys(status) {
			walk(status[key], func(s string) {
				if ip, ok := parseAddress(s); ok {
					out[node] = append(out[node], Announced{IP: ip, How: key})
				}
			})
		}
		sort.SliceStable(out[node], func(i, j int) bool { return out[node][i].IP.Less(out[node][j].IP) })
	}
	return out
}

func nodeOf(o map[string]any) string {
	for _, part := range []string{"spec", "status"} {
		if m, ok := o[part].(map[string]any); ok {
			if n, ok := m["nodeName"].(string); ok && n != "" {
				return n
			}
		}
	}
	md, _ := o["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

func walk(v any, visit func(string)) {
	switch x := v.(type) {
	case string:
		visit(x)
	case []any:
		for _, e := range x {
			walk(e, visit)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			walk(x[k], visit)
		}
	}
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

// eventAnnouncers reads the speakers' events per Service: the node of the
// newest NodeAssigned (L2 has one owner) and every node that sent a
// BGPAdvertised (BGP: several nodes advertise; a withdrawal sends no event).
func eventAnnouncers(events []corev1.Event) map[string][]Announcer {
	sorted := append([]corev1.Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return eventTime(sorted[i]).Before(eventTime(sorted[j])) })
	l2 := map[string]string{}
	bgp := map[string]map[string]bool{}
	for _, e := range sorted {
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		switch e.Reason {
		case "NodeAssigned":
			if n := between(e.Message, "from node ", " on "); n != "" {
				l2[key] = n
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
	for key, n := range l2 {
		out[key] = append(out[key], Announcer{Node: n, How: "l2, last NodeAssigned event"})
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
