package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/internal/members"
	"github.com/herald-lb/herald/test/memberkey"
)

// testStart is a memberStart on 127.0.0.1 with the key from the Secret
// in idx (the file is never there), quick retries and a recorder.
func testStart(t *testing.T, port int) (memberStart, cache.Indexer, *daemon.Health, *record.FakeRecorder) {
	t.Helper()
	idx, secrets := memberkey.SecretCache(t)
	h := &daemon.Health{}
	rec := record.NewFakeRecorder(100)
	return memberStart{
		Key:      members.KeySource{File: filepath.Join(t.TempDir(), "key"), Secret: "herald-memberlist", Namespace: "herald-system", Secrets: secrets},
		NodeName: "node1", BindAddr: "127.0.0.1", Port: port,
		Config: func(bind string, keys members.Keys) members.Config {
			return members.Config{NodeName: "node1", BindAddr: bind, BindPort: port, SecretKey: keys.Primary, OtherKeys: keys.Others, Logger: quiet, Timing: members.DefaultTiming()}
		},
		Log: quiet, Health: h, Recorder: rec, Pod: corev1.ObjectReference{Kind: "Pod", Namespace: "herald-system", Name: "herald-speaker-x"},
		Backoff: daemon.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond},
	}, idx, h, rec
}

// TestStartReadyOnceTheKeyAppears: with no key yet the start waits, not
// ready, the reason in /readyz (health) and in a Warning event on the Pod,
// and once the Secret gets its key the member list starts and the wait
// clears, in the same process.
func TestStartReadyOnceTheKeyAppears(t *testing.T) {
	m, idx, h, rec := testStart(t, 0)
	type result struct {
		ml  *members.Members
		err error
	}
	done := make(chan result, 1)
	go func() {
		ml, err := m.start(context.Background())
		done <- result{ml, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(h.Waits()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if w := h.Waits(); len(w) != 1 || !strings.Contains(w[0], "member list: ") || !strings.Contains(w[0], "herald-system/herald-memberlist not found") {
		t.Fatalf("waits = %q, want the member list waiting for the Secret", w)
	}
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, "Warning MemberListWaiting ") || !strings.Contains(ev, "not found") {
			t.Errorf("event %q", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event while waiting")
	}
	if err := idx.Add(memberkey.Secret(memberkey.Good)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.ml == nil {
			t.Fatalf("start = %v, %v", r.ml, r.err)
		}
		_ = r.ml.Shutdown()
	case <-time.After(30 * time.Second):
		t.Fatal("start did not return after the key appeared")
	}
	if w := h.Waits(); len(w) != 0 {
		t.Errorf("waits = %q after the start, want none", w)
	}
}

// TestStartNeverGivesUp: on simulated time, a key that appears only after
// 7 minutes (the speaker used to give up after 5) is waited for, and the
// member list starts.
func TestStartNeverGivesUp(t *testing.T) {
	m, idx, _, _ := testStart(t, 0)
	m.Backoff = daemon.Backoff{}
	var now time.Duration
	m.Sleep = func(ctx context.Context, d time.Duration) bool {
		now += d
		if now >= 7*time.Minute {
			if _, ok, _ := idx.GetByKey("herald-system/herald-memberlist"); !ok {
				if err := idx.Add(memberkey.Secret(memberkey.Good)); err != nil {
					t.Error(err)
				}
			}
		}
		return ctx.Err() == nil
	}
	ml, err := m.start(context.Background())
	if err != nil {
		t.Fatalf("start = %v after %s of simulated time", err, now)
	}
	_ = ml.Shutdown()
	if now < 7*time.Minute || now > 7*time.Minute+5*time.Second {
		t.Errorf("started at %s of simulated time, want at most one 5 s retry after 7m0s", now)
	}
}

// TestStartMalformedKeyIsPermanent: a malformed key is not waited for: the
// start fails at once with an error marked permanent that names the
// Secret and its key.
func TestStartMalformedKeyIsPermanent(t *testing.T) {
	m, idx, h, _ := testStart(t, 0)
	if err := idx.Add(memberkey.Secret("short")); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	m.Sleep = func(context.Context, time.Duration) bool { attempts++; return true }
	_, err := m.start(context.Background())
	if !daemon.IsPermanent(err) || !strings.Contains(err.Error(), `member-list key (--memberlist-key-file=`) ||
		!strings.Contains(err.Error(), `Secret herald-system/herald-memberlist, key "key": holds 5 bytes`) {
		t.Fatalf("start = %v, want a permanent error naming the key", err)
	}
	if attempts != 0 || len(h.Waits()) != 0 {
		t.Errorf("%d retries, waits %q; want none", attempts, h.Waits())
	}
}

// TestStartPortTakenIsPermanent: the member-list port held by another
// program fails at once, naming the port and the flag to change it.
func TestStartPortTakenIsPermanent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	m, idx, _, _ := testStart(t, port)
	if err := idx.Add(memberkey.Secret(memberkey.Good)); err != nil {
		t.Fatal(err)
	}
	_, err = m.start(context.Background())
	want := "member-list port " + strconv.Itoa(port) + " on 127.0.0.1 is taken by another program"
	if !daemon.IsPermanent(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--memberlist-port") {
		t.Fatalf("start = %v, want a permanent error saying %q", err, want)
	}
}

type fakeNodes struct {
	node *corev1.Node
	err  error
}

func (f fakeNodes) Get(context.Context, string, metav1.GetOptions) (*corev1.Node, error) {
	return f.node, f.err
}

func nodeWith(addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{Addresses: addrs}}
}

// TestNodeAddressClassified: a Node not there yet, without an InternalIP
// yet, or an API server not answering are waited for; being forbidden to
// read it is permanent; the InternalIP is IPv4 first.
func TestNodeAddressClassified(t *testing.T) {
	gr := schema.GroupResource{Resource: "nodes"}
	v4 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "198.51.100.11"}
	v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::11"}
	ext := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.99"}
	for _, c := range []struct {
		name      string
		nodes     fakeNodes
		want      string
		permanent bool
		wantErr   string
	}{
		{"not found", fakeNodes{err: apierrors.NewNotFound(gr, "node1")}, "", false, "not found"},
		{"API down", fakeNodes{err: errors.New("connection refused")}, "", false, "connection refused"},
		{"forbidden", fakeNodes{err: apierrors.NewForbidden(gr, "node1", errors.New("RBAC"))}, "", true, "forbidden"},
		{"no InternalIP yet", fakeNodes{node: nodeWith(ext)}, "", false, "has no InternalIP address yet"},
		{"IPv6 only", fakeNodes{node: nodeWith(v6)}, "2001:db8::11", false, ""},
		{"IPv4 first", fakeNodes{node: nodeWith(v6, v4)}, "198.51.100.11", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := nodeAddress(context.Background(), c.nodes, "node1")
			if c.wantErr == "" {
				if err != nil || got != c.want {
					t.Fatalf("nodeAddress = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || daemon.IsPermanent(err) != c.permanent {
				t.Fatalf("nodeAddress err = %v (permanent %v), want %q (permanent %v)", err, daemon.IsPermanent(err), c.wantErr, c.permanent)
			}
		})
	}
}
