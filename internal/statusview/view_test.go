package statusview

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
)

func lb(ns, name string, ips ...string) corev1.Service {
	s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{v1beta1.AnnotationAllocatedFromPool: "l2"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	for _, ip := range ips {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	s.Status.Conditions = []metav1.Condition{
		{Type: v1beta1.ConditionAllocated, Status: metav1.ConditionTrue, Reason: "Allocated"},
		{Type: v1beta1.ConditionAnnounced, Status: metav1.ConditionFalse, Reason: "NoEligibleNode", Message: "no node is ready"},
	}
	return s
}

func event(ns, name, reason, msg string, at int) corev1.Event {
	return corev1.Event{InvolvedObject: corev1.ObjectReference{Namespace: ns, Name: name}, Reason: reason, Message: msg,
		LastTimestamp: metav1.NewTime(time.Unix(int64(at), 0))}
}

func inputs(withSpeakers bool) Inputs {
	in := Inputs{
		Services: []corev1.Service{lb("shop", "web", "198.51.100.5"), lb("shop", "dns", "198.51.100.6", "2001:db8::6"), lb("ops", "pending")},
		Events: []corev1.Event{
			event("shop", "web", "NodeAssigned", "announcing 198.51.100.5 from node node-a on eth0 (arp)", 1),
			event("shop", "web", "NodeAssigned", "announcing 198.51.100.5 from node node-b on eth0 (arp)", 2),
			event("shop", "dns", "BGPAdvertised", "node node-a advertises 198.51.100.6/32 to tor", 1),
			event("shop", "dns", "BGPAdvertised", "node node-c advertises 198.51.100.6/32 to tor", 1),
		},
	}
	in.Services = append(in.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "internal"}})
	in.Pools, in.PoolsRead = []v1beta1.IPAddressPool{ippool("l2", "198.51.100.0/26", "2001:db8::/120")}, true
	if withSpeakers {
		in.SpeakersServed = true
		in.Speakers = []map[string]any{
			{"metadata": map[string]any{"name": "node-a"}, "status": map[string]any{
				"pod":     "herald-speaker-x1",
				"summary": map[string]any{"l2Addresses": int64(1), "sessions": "1/2", "prefixes": int64(1)},
				"l2":      []any{map[string]any{"address": "198.51.100.5", "interfaces": []any{"eth0"}, "since": "2026-01-01T00:00:00Z"}},
				"bgp": []any{
					map[string]any{"peer": "tor", "peerAddress": "198.51.100.254", "state": "Established", "prefixes": []any{"2001:db8::6/128", "198.51.100.0/24"}},
					map[string]any{"peer": "tor-b", "peerAddress": "198.51.100.253", "state": "Active"},
				},
			}},
			{"metadata": map[string]any{"name": "node-b"}, "status": map[string]any{"l2": []any{}}},
		}
	}
	return in
}

func announcers(r Row) string {
	var out []string
	for _, a := range r.Announcers {
		out = append(out, a.Node+"("+a.How+")")
	}
	return strings.Join(out, " ")
}

func TestBuildFromEvents(t *testing.T) {
	v := Build(inputs(false), Filter{})
	if len(v.Rows) != 3 {
		t.Fatalf("rows %+v", v.Rows)
	}
	got := map[string]string{}
	for _, r := range v.Rows {
		got[r.Service] = announcers(r)
	}
	want := map[string]string{
		"ops/pending": "",
		"shop/dns":    "node-a(bgp, BGPAdvertised event) node-c(bgp, BGPAdvertised event)",
		"shop/web":    "node-b(l2, last NodeAssigned event)",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s announced by %q, want %q", k, got[k], w)
		}
	}
	var b bytes.Buffer
	if err := v.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"shop/web", "198.51.100.5", "True/Allocated", "False/NoEligibleNode", "shop/web: no node is ready", "note: no speaker status objects"} {
		if !strings.Contains(b.String(), frag) {
			t.Errorf("output lacks %q:\n%s", frag, b.String())
		}
	}
}

func TestBuildFromSpeakerReports(t *testing.T) {
	v := Build(inputs(true), Filter{})
	got := map[string]string{}
	for _, r := range v.Rows {
		got[r.Service] = announcers(r)
	}
	// The reports win over events: the session peer's address is not an
	// announced address of a Service, so it matches none.
	if got["shop/web"] != "node-a(l2, speaker report)" || got["shop/dns"] != "node-a(bgp, speaker report)" {
		t.Errorf("announcers %v", got)
	}
	if len(v.Notes) != 0 {
		t.Errorf("notes %v", v.Notes)
	}
	var b bytes.Buffer
	if err := v.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"SPEAKER POD", "herald-speaker-x1", "1/2", "198.51.100.5 (l2 on eth0)", "2001:db8::6 (bgp to tor)"} {
		if !strings.Contains(b.String(), frag) {
			t.Errorf("output lacks %q:\n%s", frag, b.String())
		}
	}
	if strings.Contains(b.String(), "198.51.100.254 (") {
		t.Errorf("a BGP peer's address shown as announced:\n%s", b.String())
	}
}

func TestFilters(t *testing.T) {
	cases := []struct {
		f    Filter
		want []string
	}{
		{Filter{Service: "web"}, []string{"shop/web"}},
		{Filter{Service: "shop/dns"}, []string{"shop/dns"}},
		{Filter{IP: netip.MustParseAddr("2001:db8::6")}, []string{"shop/dns"}},
		{Filter{Node: "node-b"}, []string{"shop/web"}},
		{Filter{Node: "node-z"}, nil},
	}
	for _, c := range cases {
		var got []string
		for _, r := range Build(inputs(false), c.f).Rows {
			got = append(got, r.Service)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
	v := Build(inputs(true), Filter{Node: "node-a"})
	if len(v.NodeReports) != 1 || len(v.NodeReports["node-a"]) != 2 || len(v.Speakers) != 1 {
		t.Errorf("node reports %+v", v.NodeReports)
	}
}

// TestHoldNote: the announcement hold is said first among the notes, with
// its holder and end; a run-out hold and an unreadable one are said too.
func TestHoldNote(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	holder, secs := "kubectl-herald-migrate", int32(60)
	hold := func(spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "herald-system", Name: v1beta1.AnnounceHoldLease,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}, Spec: spec}
	}
	for _, c := range []struct {
		name    string
		in      Inputs
		want    []string
		notHeld bool
	}{
		{"none", Inputs{}, nil, true},
		{"until deleted", Inputs{Hold: hold(coordinationv1.LeaseSpec{HolderIdentity: &holder})},
			[]string{"ANNOUNCEMENTS HELD by kubectl-herald-migrate", "herald-system/herald-announce-hold", "until it is deleted", "delete lease herald-announce-hold"}, false},
		{"timed", Inputs{Hold: hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: now.Add(-30 * time.Second)}})},
			[]string{"ANNOUNCEMENTS HELD", "until 1970-01-12T13:47:10Z"}, false},
		{"run out", Inputs{Hold: hold(coordinationv1.LeaseSpec{LeaseDurationSeconds: &secs})},
			[]string{"ran out at 1970-01-12T13:46:40Z", "no longer holds"}, true},
		{"forbidden", Inputs{HoldUnknown: "cannot read the Lease herald-system/herald-announce-hold (forbidden)"},
			[]string{"cannot read the Lease"}, true},
	} {
		c.in.Now, c.in.SpeakersServed, c.in.PoolsRead = now, true, true
		v := Build(c.in, Filter{})
		notes := strings.Join(v.Notes, "\n")
		if c.want == nil && notes != "" {
			t.Errorf("%s: notes %q", c.name, notes)
		}
		for _, w := range c.want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s: notes %q lack %q", c.name, notes, w)
			}
		}
		if held := strings.Contains(notes, "ANNOUNCEMENTS HELD"); held == c.notHeld {
			t.Errorf("%s: held %v", c.name, held)
		}
	}
}

func ippool(name string, addrs ...string) v1beta1.IPAddressPool {
	return v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1beta1.IPAddressPoolSpec{Addresses: addrs}}
}

// TestPoolColumnFromTheConfiguration: the pool shown is the pool containing
// the address, whatever the Service's annotation says.
func TestPoolColumnFromTheConfiguration(t *testing.T) {
	in := inputs(false)
	in.Pools = append(in.Pools, ippool("bgp", "198.51.100.128/26"))
	liar := lb("t", "liar", "198.51.100.7")
	liar.Annotations[v1beta1.AnnotationAllocatedFromPool] = "bgp"
	orphan := lb("t", "orphan", "198.51.100.99")
	none := lb("t", "none", "198.51.100.8")
	delete(none.Annotations, v1beta1.AnnotationAllocatedFromPool)
	in.Services = append(in.Services, liar, orphan, none)
	got := map[string]string{}
	for _, r := range Build(in, Filter{}).Rows {
		got[r.Service] = r.Pool
	}
	want := map[string]string{"t/liar": "l2", "t/orphan": "l2 (outside its ranges, as annotated: the pool has no record yet)",
		"t/none": "l2", "shop/dns": "l2", "ops/pending": ""}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: pool %q, want %q", k, got[k], w)
		}
	}
	in.PoolsRead = false
	v := Build(in, Filter{})
	for _, r := range v.Rows {
		if r.Service == "t/liar" && r.Pool != "bgp" {
			t.Errorf("without pools: %q", r.Pool)
		}
	}
	if len(v.Notes) == 0 || !strings.Contains(v.Notes[len(v.Notes)-1], "could not be read") {
		t.Errorf("notes %v", v.Notes)
	}
}

// recordOutside gives a pool the status the controller writes, recording
// ips as held from it outside its ranges.
func recordOutside(p v1beta1.IPAddressPool, ips ...string) v1beta1.IPAddressPool {
	p.Generation, p.Status.ObservedGeneration = 1, 1
	p.Status.OutsideRanges, p.Status.AddressesOutsideRanges = int64(len(ips)), ips
	return p
}

// TestPoolColumnOutsideFollowsThePoolsRecord: an address no pool contains
// shows the pool whose status records it, whatever the annotation says,
// and no pool when none records it.
func TestPoolColumnOutsideFollowsThePoolsRecord(t *testing.T) {
	in := inputs(false)
	in.Pools = []v1beta1.IPAddressPool{
		recordOutside(ippool("l2", "198.51.100.0/26", "2001:db8::/120"), "198.51.100.99"),
		recordOutside(ippool("bgp", "198.51.100.128/26")),
	}
	kept := lb("t", "kept", "198.51.100.99")
	kept.Annotations[v1beta1.AnnotationAllocatedFromPool] = "bgp"
	stray := lb("t", "stray", "198.51.100.100")
	stray.Annotations[v1beta1.AnnotationAllocatedFromPool] = "bgp"
	in.Services = append(in.Services, kept, stray)
	got := map[string]string{}
	for _, r := range Build(in, Filter{}).Rows {
		got[r.Service] = r.Pool
	}
	if got["t/kept"] != "l2 (outside its ranges)" || got["t/stray"] != "-" {
		t.Errorf("pools kept %q, stray %q", got["t/kept"], got["t/stray"])
	}
}

// TestSpeakerReportsOfASecondInstallation: a SpeakerStatus of
// installation blue (<node>.blue, labelled) reports for its node; an
// unlabelled object with a dot in its name is a node of that name.
func TestSpeakerReportsOfASecondInstallation(t *testing.T) {
	in := inputs(true)
	in.Services = append(in.Services, lb("blue", "web", "198.51.100.7"), lb("dots", "web", "198.51.100.8"))
	l2 := func(addr string) map[string]any {
		return map[string]any{"l2": []any{map[string]any{"address": addr, "interfaces": []any{"eth0"}, "since": "2026-01-01T00:00:00Z"}}}
	}
	in.Speakers = append(in.Speakers,
		map[string]any{"metadata": map[string]any{"name": "node-c.blue", "labels": map[string]any{v1beta1.LabelInstallation: "blue"}}, "status": l2("198.51.100.7")},
		map[string]any{"metadata": map[string]any{"name": "node-d.example"}, "status": l2("198.51.100.8")})
	v := Build(in, Filter{})
	got := map[string]string{}
	for _, r := range v.Rows {
		got[r.Service] = announcers(r)
	}
	if got["blue/web"] != "node-c(l2, speaker report)" || got["dots/web"] != "node-d.example(l2, speaker report)" {
		t.Errorf("announcers %v", got)
	}
	var names []string
	for _, s := range v.Speakers {
		names = append(names, s.Node)
	}
	if strings.Join(names, " ") != "node-a node-b node-c.blue node-d.example" {
		t.Errorf("speaker lines %v, want one per object", names)
	}
}

// TestDrainingNodeNoted: a SpeakerStatus with draining set is shown as a
// draining node, with what it still announces; once it announces
// nothing, the note says so; other nodes get no note.
func TestDrainingNodeNoted(t *testing.T) {
	in := inputs(true)
	in.Speakers[0]["status"].(map[string]any)["draining"] = true
	in.Speakers[1]["status"].(map[string]any)["draining"] = true
	v := Build(in, Filter{})
	if len(v.Speakers) != 2 || !v.Speakers[0].Draining || !v.Speakers[1].Draining {
		t.Fatalf("speakers %+v", v.Speakers)
	}
	want := []string{
		"node node-a is DRAINING (label herald.dev/drain): it still announces 2 address(es), 1 L2 and 1 BGP prefix(es); kubectl herald drain --undo node-a ends the drain",
		"node node-b is DRAINING (label herald.dev/drain): it announces nothing any more; kubectl herald drain --undo node-b ends the drain",
	}
	if strings.Join(v.Notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes\n%s\nwant\n%s", strings.Join(v.Notes, "\n"), strings.Join(want, "\n"))
	}
	if v := Build(inputs(true), Filter{}); len(v.Notes) != 0 {
		t.Errorf("no node draining, notes %v", v.Notes)
	}
}

// TestSpreadServiceShowsEachAddressOwner: a Service whose addresses of a
// family are spread over nodes (herald.dev/address-count) shows, from
// the events as from the speakers' reports, which node answers which
// address, not only the node of its newest event.
func TestSpreadServiceShowsEachAddressOwner(t *testing.T) {
	in := Inputs{
		Services: []corev1.Service{lb("shop", "spread", "198.51.100.7", "198.51.100.8", "198.51.100.9")},
		Events: []corev1.Event{
			event("shop", "spread", "NodeAssigned", "announcing 198.51.100.7 from node node-a on eth0 (arp)", 1),
			event("shop", "spread", "NodeAssigned", "announcing 198.51.100.8 from node node-b on eth0 (arp)", 2),
			event("shop", "spread", "NodeAssigned", "announcing 198.51.100.9 from node node-c on eth0 (arp)", 3),
			event("shop", "spread", "NodeAssigned", "announcing 198.51.100.7 from node node-d on eth0 (arp)", 4),
		},
	}
	v := Build(in, Filter{})
	if len(v.Rows) != 1 {
		t.Fatalf("rows %+v", v.Rows)
	}
	if got, want := announcers(v.Rows[0]), "node-d(l2, last NodeAssigned event) node-b(l2, last NodeAssigned event) node-c(l2, last NodeAssigned event)"; got != want {
		t.Errorf("announced by %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := v.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"198.51.100.7: node-d (l2, last NodeAssigned event)", "198.51.100.8: node-b (", "198.51.100.9: node-c ("} {
		if !strings.Contains(b.String(), frag) {
			t.Errorf("output lacks %q:\n%s", frag, b.String())
		}
	}
}

// A Service with several addresses per family (herald.dev/address-count)
// shows how many it holds and which node announces each: from the
// speakers' reports, else from each address's newest NodeAssigned event.
func TestSeveralAddressesPerFamily(t *testing.T) {
	spread := lb("shop", "spread", "198.51.100.10", "198.51.100.11", "198.51.100.12", "2001:db8::10", "2001:db8::11", "2001:db8::12")
	l2 := func(node string, addrs ...string) map[string]any {
		var list []any
		for _, a := range addrs {
			list = append(list, map[string]any{"address": a, "interfaces": []any{"eth0"}})
		}
		return map[string]any{"metadata": map[string]any{"name": node}, "status": map[string]any{"l2": list}}
	}
	in := Inputs{Services: []corev1.Service{spread, lb("shop", "web", "198.51.100.5")}, SpeakersServed: true, Speakers: []map[string]any{
		l2("node-a", "198.51.100.10", "2001:db8::12", "198.51.100.5"), l2("node-b", "198.51.100.11", "2001:db8::10"), l2("node-c", "198.51.100.12")}}
	want := "shop/spread: 3 addresses per family (herald.dev/address-count): 198.51.100.10 by node-a, 198.51.100.11 by node-b, " +
		"198.51.100.12 by node-c, 2001:db8::10 by node-b, 2001:db8::11 by -, 2001:db8::12 by node-a\n"
	out := written(t, Build(in, Filter{}))
	for _, frag := range []string{want, "198.51.100.10: node-a (l2, speaker report), 198.51.100.11: node-b (l2, speaker report)", "shop/web  "} {
		if !strings.Contains(out, frag) {
			t.Errorf("output lacks %q:\n%s", frag, out)
		}
	}
	if strings.Count(out, "addresses per family") != 1 || strings.Contains(out, "198.51.100.5: ") {
		t.Errorf("a Service with one address per family is shown as several:\n%s", out)
	}
	// From events: the newest owner of each address.
	in = Inputs{Services: []corev1.Service{spread}, Events: []corev1.Event{
		event("shop", "spread", "NodeAssigned", "announcing 198.51.100.10 from node node-a on eth0 (arp)", 1),
		event("shop", "spread", "NodeAssigned", "announcing 198.51.100.11 from node node-b on eth0 (arp)", 2),
		event("shop", "spread", "NodeAssigned", "announcing 198.51.100.10 from node node-c on eth0 (arp)", 3),
		event("shop", "spread", "NodeAssigned", "announcing 198.51.100.99 from node node-d on eth0 (arp)", 4),
	}}
	out = written(t, Build(in, Filter{}))
	want = "shop/spread: 3 addresses per family (herald.dev/address-count): 198.51.100.10 by node-c, 198.51.100.11 by node-b, " +
		"198.51.100.12 by -, 2001:db8::10 by -, 2001:db8::11 by -, 2001:db8::12 by -\n"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func written(t *testing.T, v View) string {
	t.Helper()
	var b bytes.Buffer
	if err := v.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
