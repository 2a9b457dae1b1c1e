package speaker

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/announce"
	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/installation"
	"github.com/herald-lb/herald/internal/k8s/lean/leantest"
)

const nodeUID = types.UID("uid-node1")

func l2Status(addrs ...string) v1beta1.SpeakerStatusStatus {
	var l2 []l2Entry
	for _, a := range addrs {
		l2 = append(l2, l2Entry{IP: netip.MustParseAddr(a), Interfaces: []string{"eth0"}, Since: time.Unix(1000, 0)})
	}
	return buildStatus("speaker-abc", l2, nil, nil)
}

// writes counts the create and update calls on SpeakerStatuses.
func writes(c *heraldfake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "speakerstatuses" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			n++
		}
	}
	return n
}

func testPublisher(c *heraldfake.Clientset, now *time.Time) *statusPublisher {
	return &statusPublisher{client: c.HeraldV1beta1().SpeakerStatuses(), node: "node1", name: "node1", manager: "herald-speaker",
		interval: time.Second, now: func() time.Time { return *now }}
}

func publishOK(t *testing.T, p *statusPublisher, want v1beta1.SpeakerStatusStatus) time.Duration {
	t.Helper()
	wait, err := p.publish(context.Background(), want, nodeUID, false)
	if err != nil {
		t.Fatal(err)
	}
	return wait
}

// TestStatusPublisherRateLimits: the first change is written at once, the
// next ones within the interval wait for it and are written as one.
func TestStatusPublisherRateLimits(t *testing.T) {
	c := heraldfake.NewSimpleClientset() // NewClientset has no schema for Herald kinds (no OpenAPI models generated)
	now := time.Unix(2000, 0)
	p := testPublisher(c, &now)
	if w := publishOK(t, p, l2Status("198.51.100.1")); w != 0 || writes(c) != 1 {
		t.Fatalf("first publish: wait %v, %d writes", w, writes(c))
	}
	now = now.Add(300 * time.Millisecond)
	if w := publishOK(t, p, l2Status("198.51.100.1", "198.51.100.2")); w != 700*time.Millisecond || writes(c) != 1 {
		t.Fatalf("second change within the interval: wait %v, %d writes; want 700ms, 1", w, writes(c))
	}
	now = now.Add(400 * time.Millisecond)
	if w := publishOK(t, p, l2Status("198.51.100.1", "198.51.100.2", "198.51.100.3")); w != 300*time.Millisecond || writes(c) != 1 {
		t.Fatalf("third change: wait %v, %d writes", w, writes(c))
	}
	now = now.Add(300 * time.Millisecond)
	if w := publishOK(t, p, l2Status("198.51.100.1", "198.51.100.2", "198.51.100.3")); w != 0 || writes(c) != 2 {
		t.Fatalf("after the interval: wait %v, %d writes; want one write for both changes", w, writes(c))
	}
	got, err := c.HeraldV1beta1().SpeakerStatuses().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.L2) != 3 || got.Status.Summary.L2Addresses != 3 || got.Status.Pod != "speaker-abc" {
		t.Errorf("status %+v", got.Status)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "Node" || got.OwnerReferences[0].UID != nodeUID {
		t.Errorf("owner references %+v, want the Node", got.OwnerReferences)
	}
}

// TestStatusPublisherNoWriteWhenUnchanged: the same content is never
// written twice, nor by a restarted speaker that finds it already there.
func TestStatusPublisherNoWriteWhenUnchanged(t *testing.T) {
	c := heraldfake.NewSimpleClientset() // NewClientset has no schema for Herald kinds (no OpenAPI models generated)
	now := time.Unix(2000, 0)
	p := testPublisher(c, &now)
	publishOK(t, p, l2Status("198.51.100.1"))
	for i := 0; i < 5; i++ {
		now = now.Add(5 * time.Second)
		if w := publishOK(t, p, l2Status("198.51.100.1")); w != 0 {
			t.Fatalf("unchanged content waits %v", w)
		}
	}
	restarted := testPublisher(c, &now)
	publishOK(t, restarted, l2Status("198.51.100.1"))
	if writes(c) != 1 {
		t.Fatalf("%d writes of one unchanged content, want 1", writes(c))
	}
}

// TestStatusPublisherRecreatesDeleted: a deleted status is created again
// once the speaker hears of the deletion (forget), even if unchanged; a
// write that fails (the object gone under it) is retried by reading again.
func TestStatusPublisherRecreatesDeleted(t *testing.T) {
	c := heraldfake.NewSimpleClientset() // NewClientset has no schema for Herald kinds (no OpenAPI models generated)
	now := time.Unix(2000, 0)
	p := testPublisher(c, &now)
	ctx := context.Background()
	publishOK(t, p, l2Status("198.51.100.1"))
	if err := c.HeraldV1beta1().SpeakerStatuses().Delete(ctx, "node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.forget()
	now = now.Add(2 * time.Second)
	publishOK(t, p, l2Status("198.51.100.1"))
	if _, err := c.HeraldV1beta1().SpeakerStatuses().Get(ctx, "node1", metav1.GetOptions{}); err != nil {
		t.Fatalf("not recreated: %v", err)
	}
	// Deleted without the speaker hearing of it: the next change fails
	// its update, and the retry creates it.
	if err := c.HeraldV1beta1().SpeakerStatuses().Delete(ctx, "node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if _, err := p.publish(ctx, l2Status("198.51.100.2"), nodeUID, false); err == nil {
		t.Fatal("update of a deleted object succeeded")
	}
	now = now.Add(2 * time.Second)
	publishOK(t, p, l2Status("198.51.100.2"))
	got, err := c.HeraldV1beta1().SpeakerStatuses().Get(ctx, "node1", metav1.GetOptions{})
	if err != nil || len(got.Status.L2) != 1 || got.Status.L2[0].Address != "198.51.100.2" {
		t.Fatalf("after retry: %+v, %v", got, err)
	}
}

// TestBuildStatus: sorted L2 addresses with an interface; sessions with
// prefixes only while Established; the summary counts.
func TestBuildStatus(t *testing.T) {
	since := time.Unix(1000, 500)
	l2 := []l2Entry{
		{IP: netip.MustParseAddr("2001:db8::5"), Interfaces: []string{"eth1", "eth0"}, Since: since},
		{IP: netip.MustParseAddr("198.51.100.9"), Interfaces: []string{"eth0"}, Since: since},
		{IP: netip.MustParseAddr("198.51.100.8"), Since: since}, // no usable interface
	}
	sessions := []bgp.SessionState{
		{Name: "tor-b", Peer: netip.MustParseAddr("198.51.100.2"), State: "Active", PeerASN: 64600, Refused: "the router's AS 64512 is myASN", LastError: "i/o timeout"},
		{Name: "tor-a", Peer: netip.MustParseAddr("198.51.100.1"), State: "Established", Since: since, PeerASN: 64513},
	}
	routes := []announce.Route{
		{Prefix: netip.MustParsePrefix("198.51.100.9/32"), Peers: []string{"tor-a", "tor-b"}},
		{Prefix: netip.MustParsePrefix("198.51.100.10/32"), Peers: []string{"tor-a"}},
	}
	st := buildStatus("speaker-abc", l2, sessions, routes)
	if len(st.L2) != 2 || st.L2[0].Address != "198.51.100.9" || st.L2[1].Address != "2001:db8::5" {
		t.Fatalf("L2 %+v", st.L2)
	}
	if st.L2[1].Interfaces[0] != "eth0" || !st.L2[0].Since.Time.Equal(time.Unix(1000, 0)) {
		t.Errorf("L2 entry %+v", st.L2[1])
	}
	if len(st.BGP) != 2 || st.BGP[0].Peer != "tor-a" || len(st.BGP[0].Prefixes) != 2 || len(st.BGP[1].Prefixes) != 0 {
		t.Fatalf("BGP %+v", st.BGP)
	}
	if a, b := st.BGP[0], st.BGP[1]; a.PeerASN != 64513 || a.Message != "" || b.PeerASN != 64600 || b.Message != "the router's AS 64512 is myASN" {
		t.Errorf("peer ASNs and messages: %+v %+v", a, b)
	}
	if m := sessionMessage(bgp.SessionState{Error: "bad config", Refused: "bad AS"}); m != "bad config" {
		t.Errorf("a refused configuration comes first: %q", m)
	}
	if m := sessionMessage(bgp.SessionState{Error: strings.Repeat("x", 600)}); len(m) != 512 {
		t.Errorf("message of %d bytes, the schema allows 512", len(m))
	}
	if st.Summary != (v1beta1.SpeakerSummary{L2Addresses: 2, Sessions: "1/2", Prefixes: 2}) {
		t.Errorf("summary %+v", st.Summary)
	}
}

// TestSpeakerPublishesWhatItAnnounces: a running speaker writes its
// SpeakerStatus once it announces an address, writes it again when it is
// deleted, and leaves it empty after Shutdown.
func TestSpeakerPublishesWhatItAnnounces(t *testing.T) {
	ctx := context.Background()
	s, _, herald := runOneAddressSpeaker(t)
	statuses := herald.HeraldV1beta1().SpeakerStatuses()
	announced := func() bool {
		got, err := statuses.Get(ctx, "node1", metav1.GetOptions{})
		return err == nil && len(got.Status.L2) == 1 && got.Status.L2[0].Address == "198.51.100.70" && got.Status.Pod == "speaker-abc"
	}
	poll(t, "the status lists 198.51.100.70", announced)
	if err := statuses.Delete(ctx, "node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deleted status written again", announced)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	s.Shutdown(sctx)
	got, err := statuses.Get(ctx, "node1", metav1.GetOptions{})
	if err != nil || len(got.Status.L2) != 0 || got.Status.Summary.L2Addresses != 0 {
		t.Fatalf("after shutdown: %+v, %v; want an empty status", got, err)
	}
}

// TestStatusPublisherOfAnInstallation: a second installation's speaker
// writes its own SpeakerStatus, <node>.<installation>, labelled with the
// installation and owned by the Node, beside the default one's, which it
// never writes.
func TestStatusPublisherOfAnInstallation(t *testing.T) {
	c := heraldfake.NewSimpleClientset()
	now := time.Unix(2000, 0)
	ctx := context.Background()
	publishOK(t, testPublisher(c, &now), l2Status("198.51.100.1"))
	inst := installation.Name("blue")
	name, err := inst.SpeakerStatus("node1")
	if err != nil {
		t.Fatal(err)
	}
	p := &statusPublisher{client: c.HeraldV1beta1().SpeakerStatuses(), node: "node1", name: name, labels: inst.Labels(),
		manager: inst.Writer("herald-speaker"), interval: time.Second, now: func() time.Time { return now }}
	publishOK(t, p, l2Status("198.51.100.9"))
	got, err := c.HeraldV1beta1().SpeakerStatuses().Get(ctx, "node1.blue", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1beta1.LabelInstallation] != "blue" || len(got.Status.L2) != 1 || got.Status.L2[0].Address != "198.51.100.9" {
		t.Errorf("node1.blue: labels %v, l2 %+v", got.Labels, got.Status.L2)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Name != "node1" || got.OwnerReferences[0].UID != nodeUID {
		t.Errorf("node1.blue owner references %+v, want Node node1", got.OwnerReferences)
	}
	def, err := c.HeraldV1beta1().SpeakerStatuses().Get(ctx, "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Labels) != 0 || len(def.Status.L2) != 1 || def.Status.L2[0].Address != "198.51.100.1" {
		t.Errorf("the default installation's node1 changed: labels %v, l2 %+v", def.Labels, def.Status.L2)
	}
}

// TestDrainLabelShownAndWithdrawn: labelling the node herald.dev/drain
// makes its speaker stop answering for the address and write draining
// into its SpeakerStatus; removing the label brings both back.
func TestDrainLabelShownAndWithdrawn(t *testing.T) {
	ctx := context.Background()
	_, kube, herald := runOneAddressSpeaker(t)
	status := func(draining bool, l2 int) func() bool {
		return func() bool {
			got, err := herald.HeraldV1beta1().SpeakerStatuses().Get(ctx, "node1", metav1.GetOptions{})
			return err == nil && got.Status.Draining == draining && len(got.Status.L2) == l2
		}
	}
	poll(t, "the status lists the address, not draining", status(false, 1))
	label := func(v string) {
		t.Helper()
		n, err := kube.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = map[string]string{}
		if v != "" {
			n.Labels[v1beta1.LabelDrain] = v
		}
		if _, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label("true")
	poll(t, "draining, nothing announced", status(true, 0))
	label("")
	poll(t, "announced again, not draining", status(false, 1))
}

// runOneAddressSpeaker runs, until the test ends, node1's speaker over
// fake clientsets holding one Service at 198.51.100.70 in an L2 pool,
// and returns it with the clientsets.
func runOneAddressSpeaker(t *testing.T) (*Speaker, *fake.Clientset, *heraldfake.Clientset) {
	t.Helper()
	vip := corev1.LoadBalancerIPModeVIP
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: nodeUID}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{
				Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.70", IPMode: &vip}}}}})
	herald := heraldfake.NewSimpleClientset(
		&v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1beta1.IPAddressPoolSpec{Addresses: []string{"198.51.100.64/27"}}},
		&v1beta1.L2Advertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}})
	s, err := New(leantest.FromClientsets(kube, herald, testNS), Options{NodeName: "node1", Namespace: testNS, PodName: "speaker-abc", L2: &nullL2{}, StatusInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, kube, herald
}
