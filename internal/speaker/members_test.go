package speaker

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/internal/members"
)

// recordingLiveness records what the speaker hands to the member list.
type recordingLiveness struct{ calls []string }

func (r *recordingLiveness) State(string) members.State  { return members.Alive }
func (r *recordingLiveness) Settled() bool               { return true }
func (r *recordingLiveness) Leave(context.Context) error { return nil }
func (r *recordingLiveness) Join(addrs []string) {
	r.calls = append(r.calls, "join "+strings.Join(addrs, ","))
}
func (r *recordingLiveness) Retain(nodes []string) {
	r.calls = append(r.calls, "retain "+strings.Join(nodes, ","))
}

func node(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

// TestJoinMembersHandsOnlyChanges: the other nodes' addresses go to Join
// and every Node name to Retain, each only when it changed.
func TestJoinMembersHandsOnlyChanges(t *testing.T) {
	live := &recordingLiveness{}
	lv := &liveness{node: "node1"}
	lv.members.Store(&memberHolder{live})
	steps := []struct {
		nodes []*corev1.Node
		want  []string
	}{
		{[]*corev1.Node{node("node2", "198.51.100.12"), node("node1", "198.51.100.11"), node("node3", "2001:db8::13")},
			[]string{"join 198.51.100.12,2001:db8::13", "retain node1,node2,node3"}},
		{[]*corev1.Node{node("node1", "198.51.100.11"), node("node2", "198.51.100.12"), node("node3", "2001:db8::13")}, nil},
		{[]*corev1.Node{node("node1", "198.51.100.11"), node("node2", "198.51.100.12")},
			[]string{"join 198.51.100.12", "retain node1,node2"}},
		{[]*corev1.Node{node("node1", "198.51.100.11"), node("node2b", "198.51.100.12")}, []string{"retain node1,node2b"}},
	}
	for i, st := range steps {
		live.calls = nil
		lv.join(st.nodes)
		if !slices.Equal(live.calls, st.want) {
			t.Errorf("step %d: %q, want %q", i, live.calls, st.want)
		}
	}
}
