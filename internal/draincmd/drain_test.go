package draincmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/api/v1beta1"
)

// syncBuffer is a bytes.Buffer safe to read while Run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func speaker(name string, draining bool, l2 []string, prefixes ...string) *v1beta1.SpeakerStatus {
	ss := &v1beta1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ss.Status.Draining = draining
	for _, a := range l2 {
		ss.Status.L2 = append(ss.Status.L2, v1beta1.L2AnnouncementStatus{Address: a, Interfaces: []string{"eth0"}})
	}
	ss.Status.Summary.L2Addresses = int32(len(l2))
	if len(prefixes) > 0 {
		ss.Status.BGP = []v1beta1.BGPSessionStatus{{Peer: "tor", State: "Established", Prefixes: prefixes}}
	}
	return ss
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func drainLabel(t *testing.T, kube *fake.Clientset, name string) (string, bool) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := n.Labels[v1beta1.LabelDrain]
	return v, ok
}

// TestDrainWaitsAndPrintsWhereAddressesWent: drain labels the node, keeps
// waiting while its speaker has not seen the label or still lists
// addresses, prints each address as it leaves with the node that took
// it, and returns once the node announces nothing; the other labels stay.
func TestDrainWaitsAndPrintsWhereAddressesWent(t *testing.T) {
	kube := fake.NewClientset(node("node1", map[string]string{"zone": "a"}), node("node2", nil))
	herald := heraldfake.NewSimpleClientset(
		speaker("node1", false, []string{"198.51.100.5"}, "198.51.100.6/32"),
		speaker("node2", false, nil, "198.51.100.6/32"))
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Kube: kube, Herald: herald, Node: "node1", Timeout: 5 * time.Second, Poll: time.Millisecond, Out: out})
	}()
	poll(t, "the drain label", func() bool { v, ok := drainLabel(t, kube, "node1"); return ok && v == "true" })
	statuses := herald.HeraldV1beta1().SpeakerStatuses()
	ctx := context.Background()
	// the L2 address moves first: node1 still advertises over BGP
	if _, err := statuses.Update(ctx, speaker("node1", true, nil, "198.51.100.6/32"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := statuses.Update(ctx, speaker("node2", false, []string{"198.51.100.5"}, "198.51.100.6/32"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the L2 move printed", func() bool {
		return strings.Contains(out.String(), "198.51.100.5 (l2) left node1: now announced by node2")
	})
	select {
	case err := <-done:
		t.Fatalf("returned while node1 still advertises: %v\n%s", err, out.String())
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := statuses.Update(ctx, speaker("node1", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v\n%s", err, out.String())
	}
	for _, want := range []string{"198.51.100.6/32 (bgp) left node1: now announced by node2", "node node1 announces nothing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n, _ := kube.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{}); n.Labels["zone"] != "a" {
		t.Errorf("other labels lost: %v", n.Labels)
	}
}

// TestDrainWaitsForTheSpeakerToSeeTheLabel: an empty status that does not
// say draining yet (the speaker has not seen the label) is not a drained
// node; the timeout names what is missing and leaves the label on.
func TestDrainWaitsForTheSpeakerToSeeTheLabel(t *testing.T) {
	kube := fake.NewClientset(node("node1", nil))
	herald := heraldfake.NewSimpleClientset(speaker("node1", false, []string{"198.51.100.5"}))
	var out bytes.Buffer
	err := Run(context.Background(), Options{Kube: kube, Herald: herald, Node: "node1", Timeout: 50 * time.Millisecond, Poll: time.Millisecond, Out: &out})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "198.51.100.5 (l2)") {
		t.Fatalf("err %v, want a timeout naming 198.51.100.5", err)
	}
	if _, ok := drainLabel(t, kube, "node1"); !ok {
		t.Error("the label was removed on timeout")
	}
	herald = heraldfake.NewSimpleClientset(speaker("node1", false, nil))
	err = Run(context.Background(), Options{Kube: kube, Herald: herald, Node: "node1", Timeout: 50 * time.Millisecond, Poll: time.Millisecond, Out: &out})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "has not reported the drain") {
		t.Fatalf("err %v, want a timeout: the speaker has not seen the label", err)
	}
}

// TestDrainNodeWithoutSpeaker: a node with no SpeakerStatus announces
// nothing; the drain returns at once, with the label set.
func TestDrainNodeWithoutSpeaker(t *testing.T) {
	kube := fake.NewClientset(node("node1", nil))
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Kube: kube, Herald: heraldfake.NewSimpleClientset(), Node: "node1", Timeout: time.Second, Poll: time.Millisecond, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if v, _ := drainLabel(t, kube, "node1"); v != "true" {
		t.Errorf("label %q", v)
	}
}

// TestUndoRemovesTheLabel: --undo removes the label and nothing else;
// an unknown node is an error naming it.
func TestUndoRemovesTheLabel(t *testing.T) {
	kube := fake.NewClientset(node("node1", map[string]string{v1beta1.LabelDrain: "true", "zone": "a"}))
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Kube: kube, Herald: heraldfake.NewSimpleClientset(), Node: "node1", Undo: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	n, _ := kube.CoreV1().Nodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if _, ok := n.Labels[v1beta1.LabelDrain]; ok || n.Labels["zone"] != "a" {
		t.Errorf("labels after undo: %v", n.Labels)
	}
	err := Run(context.Background(), Options{Kube: kube, Herald: heraldfake.NewSimpleClientset(), Node: "nope", Undo: true, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "node nope: no such node") {
		t.Errorf("unknown node: %v", err)
	}
}

// TestAnnouncedOfAnInstallation: a second installation's SpeakerStatus
// counts for its node.
func TestAnnouncedOfAnInstallation(t *testing.T) {
	ss := speaker("node1.blue", true, []string{"198.51.100.9"})
	ss.Labels = map[string]string{v1beta1.LabelInstallation: "blue"}
	r, err := readAll(context.Background(), heraldfake.NewSimpleClientset(ss))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.of("node1"); len(got) != 1 || got[0] != (Address{IP: "198.51.100.9", How: "l2"}) || r.drained("node1") {
		t.Errorf("node1: %v drained=%v", got, r.drained("node1"))
	}
}

// TestDrainWaitsForTheTaker: the drained node's status may empty before
// the new owner's lists the address (each speaker writes once a second):
// the drain then waits a few polls and names the new owner; an address
// nobody takes is printed as such once those polls are over.
func TestDrainWaitsForTheTaker(t *testing.T) {
	kube := fake.NewClientset(node("node1", nil), node("node2", nil))
	herald := heraldfake.NewSimpleClientset(
		speaker("node1", false, []string{"198.51.100.5", "198.51.100.7"}),
		speaker("node2", false, nil))
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Kube: kube, Herald: herald, Node: "node1", Timeout: 5 * time.Second, Poll: 20 * time.Millisecond, Out: out})
	}()
	poll(t, "the drain label", func() bool { v, ok := drainLabel(t, kube, "node1"); return ok && v == "true" })
	statuses := herald.HeraldV1beta1().SpeakerStatuses()
	ctx := context.Background()
	if _, err := statuses.Update(ctx, speaker("node1", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := statuses.Update(ctx, speaker("node2", false, []string{"198.51.100.5"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v\n%s", err, out.String())
	}
	want := "node node1: labelled herald.dev/drain=true; waiting until it announces nothing (timeout 5s)\n" +
		"198.51.100.5 (l2) left node1: now announced by node2\n" +
		"198.51.100.7 (l2) left node1: no other node announces it\n" +
		"node node1 announces nothing: run kubectl drain node1 now\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
