package statusview

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/config"
	"github.com/herald-lb/herald/internal/k8s"
)

// Inputs are what the view is built from.
type Inputs struct {
	Services []corev1.Service
	Events   []corev1.Event
	// Speakers are the speakers' per-node status objects as unstructured
	// content; nil when the cluster has none.
	Speakers []map[string]any
	// SpeakersServed says whether the cluster serves speakerstatuses.
	SpeakersServed bool
	// Hold is the announcement hold Lease (v1beta1.AnnounceHoldLease),
	// nil when there is none; HoldUnknown says why it could not be read.
	Hold        *coordinationv1.Lease
	HoldUnknown string
	// Pools are the IPAddressPools; PoolsRead says whether they could be
	// read. A Service's pool is the pool containing its address, never
	// what its annotation says (tenants can edit that).
	Pools     []v1beta1.IPAddressPool
	PoolsRead bool
	// Now is when the inputs were read.
	Now time.Time
}

// Filter limits the view to one Service ("name" or "namespace/name"), one
// address, or one node; the zero value shows everything.
type Filter struct {
	Service string
	IP      netip.Addr
	Node    string
}

// Announcer is a node announcing an address, and how the view knows.
type Announcer struct {
	Node, How string
	// IP is the address it announces; unset when the view does not
	// know which of the Service's (a BGPAdvertised event).
	IP netip.Addr
}

// Row is one Service.
type Row struct {
	Service    string
	IPs        []netip.Addr
	Pool       string
	Allocated  string // condition status and reason
	Announced  string
	Message    string // the Announced condition's message
	Announcers []Announcer
	// PerFamily is the most addresses the Service holds of one family
	// (herald.dev/address-count): above 1, a line after the table says
	// which node announces each.
	PerFamily int
}

// View is the answer.
type View struct {
	Rows []Row
	// NodeReports are the addresses each speaker reports, by node.
	NodeReports map[string][]Announced
	// Speakers summarise each node's SpeakerStatus, sorted by node.
	Speakers []SpeakerLine
	Notes    []string
}

// SpeakerLine is one node's SpeakerStatus in short.
type SpeakerLine struct {
	Node, Pod string
	Summary   v1beta1.SpeakerSummary
	Truncated bool
	// Draining: the node carries the drain label herald.dev/drain.
	Draining bool
}

// Announced is one address a speaker reports.
type Announced struct {
	IP  netip.Addr
	How string
}

// Build computes the view.
func Build(in Inputs, f Filter) View {
	reports, lines, notes := speakerReports(in.Speakers)
	v := View{NodeReports: reports, Speakers: lines, Notes: notes}
	if !in.SpeakersServed {
		v.Notes = append(v.Notes, "no speaker status objects (speakerstatuses.herald.dev) in this cluster: announcers are taken from the speakers' events, which say who announced last, not who announces now")
	}
	if n := holdNote(in, in.Now); n != "" {
		v.Notes = append(v.Notes, n)
	}
	byIP := map[netip.Addr][]Announcer{}
	for _, node := range sortedKeys(v.NodeReports) {
		for _, a := range v.NodeReports[node] {
			byIP[a.IP] = append(byIP[a.IP], Announcer{Node: node, How: strings.Fields(a.How)[0] + ", speaker report", IP: a.IP})
		}
	}
	fromEvents := eventAnnouncers(in.Events)
	pools := poolConfig(in)
	if !in.PoolsRead {
		v.Notes = append(v.Notes, "the IPAddressPools could not be read: the pool column shows the annotation "+v1beta1.AnnotationAllocatedFromPool+", which the Service's owner can edit")
	}
	for i := range in.Services {
		s := &in.Services[i]
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		r := row(s, pools)
		for _, ip := range r.IPs {
			r.Announcers = append(r.Announcers, byIP[ip]...)
		}
		if len(r.Announcers) == 0 {
			r.Announcers = fromEvents[s.Namespace+"/"+s.Name]
		}
		if f.matches(r) {
			v.Rows = append(v.Rows, r)
		}
	}
	sort.Slice(v.Rows, func(i, j int) bool { return v.Rows[i].Service < v.Rows[j].Service })
	if f.Node != "" {
		for n := range v.NodeReports {
			if n != f.Node {
				delete(v.NodeReports, n)
			}
		}
		var keep []SpeakerLine
		for _, l := range v.Speakers {
			if l.Node == f.Node {
				keep = append(keep, l)
			}
		}
		v.Speakers = keep
	}
	v.Notes = append(v.Notes, drainingNotes(v)...)
	return v
}

// drainingNotes say which nodes are draining (among the speakers shown)
// and what each still announces.
func drainingNotes(v View) []string {
	var out []string
	for _, l := range v.Speakers {
		if !l.Draining {
			continue
		}
		what := "it announces nothing any more"
		if n := len(v.NodeReports[l.Node]); n > 0 || l.Summary.L2Addresses > 0 || l.Summary.Prefixes > 0 {
			what = fmt.Sprintf("it still announces %d address(es), %d L2 and %d BGP prefix(es)", n, l.Summary.L2Addresses, l.Summary.Prefixes)
		}
		out = append(out, fmt.Sprintf("node %s is DRAINING (label %s): %s; kubectl herald drain --undo %s ends the drain", l.Node, v1beta1.LabelDrain, what, l.Node))
	}
	return out
}

// holdNote says when the speakers' announcements are held (at now).
func holdNote(in Inputs, now time.Time) string {
	if in.HoldUnknown != "" {
		return in.HoldUnknown
	}
	l := in.Hold
	if l == nil {
		return ""
	}
	holder, until := "", "until it is deleted"
	if l.Spec.HolderIdentity != nil {
		holder = " by " + *l.Spec.HolderIdentity
	}
	if t := k8s.HoldUntil(l); !t.IsZero() {
		if !now.Before(t) {
			return fmt.Sprintf("the announcement hold Lease %s/%s ran out at %s: it no longer holds the speakers", l.Namespace, l.Name, t.UTC().Format(time.RFC3339))
		}
		until = "until " + t.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("ANNOUNCEMENTS HELD%s: the Lease %s/%s exists, so every speaker answers no ARP/NDP and opens no BGP session %s (kubectl -n %[2]s delete lease %[3]s lifts it)",
		holder, l.Namespace, l.Name, until)
}

// row shows one Service; pools nil shows the pool its annotation names.
func row(s *corev1.Service, pools *config.Config) Row {
	recorded := s.Annotations[v1beta1.AnnotationAllocatedFromPool]
	r := Row{Service: s.Namespace + "/" + s.Name, Allocated: "-", Announced: "-"}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(in.IP); err == nil {
			r.IPs = append(r.IPs, ip)
		}
	}
	r.Pool = poolColumn(r.IPs, recorded, pools)
	r.PerFamily = perFamily(r.IPs)
	for _, c := range s.Status.Conditions {
		switch c.Type {
		case v1beta1.ConditionAllocated:
			r.Allocated = string(c.Status) + "/" + c.Reason
		case v1beta1.ConditionAnnounced:
			r.Announced, r.Message = string(c.Status)+"/"+c.Reason, c.Message
		}
	}
	return r
}

func (f Filter) matches(r Row) bool {
	if f.Service != "" && r.Service != f.Service && !strings.HasSuffix(r.Service, "/"+f.Service) {
		return false
	}
	if f.IP.IsValid() && !containsIP(r.IPs, f.IP) {
		return false
	}
	if f.Node != "" {
		for _, a := range r.Announcers {
			if a.Node == f.Node {
				return true
			}
		}
		return false
	}
	return true
}

func containsIP(ips []netip.Addr, ip netip.Addr) bool {
	for _, x := range ips {
		if x == ip.Unmap() {
			return true
		}
	}
	return false
}

// Write prints the view as a table, then the notes.
func (v View) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tADDRESSES\tPOOL\tALLOCATED\tANNOUNCED\tANNOUNCED BY")
	for _, r := range v.Rows {
		ips := make([]string, len(r.IPs))
		for i, ip := range r.IPs {
			ips[i] = ip.String()
		}
		var by []string
		for _, a := range r.Announcers {
			by = append(by, a.describe(len(r.IPs) > 1))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Service, orDash(strings.Join(ips, ",")), orDash(r.Pool), r.Allocated, r.Announced, orDash(strings.Join(by, ", ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range v.Rows {
		if r.Message != "" && !strings.HasPrefix(r.Announced, "True") {
			fmt.Fprintf(w, "%s: %s\n", r.Service, r.Message)
		}
	}
	for _, r := range v.Rows {
		if r.PerFamily > 1 {
			fmt.Fprintf(w, "%s: %s\n", r.Service, r.spread())
		}
	}
	if len(v.Speakers) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nNODE\tSPEAKER POD\tL2\tBGP SESSIONS UP\tPREFIXES\tANNOUNCES")
		for _, l := range v.Speakers {
			var parts []string
			for _, a := range v.NodeReports[l.Node] {
				parts = append(parts, fmt.Sprintf("%s (%s)", a.IP, a.How))
			}
			if l.Truncated {
				parts = append(parts, "... (truncated)")
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", l.Node, orDash(l.Pod), l.Summary.L2Addresses, orDash(l.Summary.Sessions), l.Summary.Prefixes, orDash(strings.Join(parts, ", ")))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describe is the announcer as the table shows it: the node and how the
// view knows, and which address when the Service has several (a Service
// with herald.dev/address-count spreads them over nodes).
func (a Announcer) describe(withIP bool) string {
	if withIP && a.IP.IsValid() {
		return fmt.Sprintf("%s: %s (%s)", a.IP, a.Node, a.How)
	}
	return fmt.Sprintf("%s (%s)", a.Node, a.How)
}

// perFamily is the most addresses of one family in ips.
func perFamily(ips []netip.Addr) int {
	var four, six int
	for _, ip := range ips {
		if ip.Is4() {
			four++
		} else {
			six++
		}
	}
	return max(four, six)
}

// spread says, for a Service with several addresses per family, how many
// it holds and which nodes announce each ("-" for none known).
func (r Row) spread() string {
	parts := make([]string, len(r.IPs))
	for i, ip := range r.IPs {
		var nodes []string
		for _, a := range r.Announcers {
			if a.IP == ip {
				nodes = append(nodes, a.Node)
			}
		}
		parts[i] = fmt.Sprintf("%s by %s", ip, orDash(strings.Join(nodes, ",")))
	}
	return fmt.Sprintf("%d addresses per family (%s): %s", r.PerFamily, v1beta1.AnnotationAddressCount, strings.Join(parts, ", "))
}
