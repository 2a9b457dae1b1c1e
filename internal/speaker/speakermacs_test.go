package speaker

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/herald-lb/herald/internal/layer2"
	"github.com/herald-lb/herald/internal/members"
)

func sameMAC(a, b net.HardwareAddr) bool { return bytes.Equal(a, b) }

func mac(last byte) net.HardwareAddr { return net.HardwareAddr{0x02, 0, 0, 0, 0, last} }

// TestLinkAddrs: the addresses a speaker publishes are those of its up,
// non-loopback Ethernet interfaces that are not excluded, once each.
func TestLinkAddrs(t *testing.T) {
	up := net.FlagUp | net.FlagBroadcast
	ifaces := []net.Interface{
		{Name: "lo", Flags: net.FlagUp | net.FlagLoopback, HardwareAddr: nil},
		{Name: "eth1", Flags: up, HardwareAddr: mac(0x22)},
		{Name: "veth12", Flags: up, HardwareAddr: mac(0x01)},
		{Name: "eth0", Flags: up, HardwareAddr: mac(0x21)},
		{Name: "bond0", Flags: up, HardwareAddr: mac(0x21)}, // eth0's bond
		{Name: "eth2", Flags: net.FlagBroadcast, HardwareAddr: mac(0x23)},
		{Name: "mcast", Flags: up, HardwareAddr: net.HardwareAddr{0x03, 0, 0, 0, 0, 1}},
		{Name: "zero", Flags: up, HardwareAddr: make(net.HardwareAddr, 6)},
		{Name: "ib0", Flags: up, HardwareAddr: make(net.HardwareAddr, 20)},
		{Name: "veth13", Flags: up, HardwareAddr: mac(0x21)}, // listed already
	}
	got := LinkAddrs(ifaces, layer2.DefaultExcludeInterfaces())
	want := []net.HardwareAddr{mac(0x21), mac(0x22)}
	if !slices.EqualFunc(got, want, sameMAC) {
		t.Errorf("LinkAddrs = %v, want %v", got, want)
	}
	if dec := decodeLinkAddrs(EncodeLinkAddrs(got)); !slices.EqualFunc(dec, want, sameMAC) {
		t.Errorf("decoded %v, want %v", dec, want)
	}
	var many []net.Interface
	for i := range 200 {
		many = append(many, net.Interface{Name: "eth" + string(rune('a'+i%26)), Flags: up, HardwareAddr: net.HardwareAddr{2, 0, 0, 0, byte(i >> 8), byte(i)}})
	}
	enc := EncodeLinkAddrs(LinkAddrs(many, nil))
	if len(enc) > members.MaxNodeData || len(decodeLinkAddrs(enc)) != maxLinkAddrs {
		t.Errorf("%d addresses in %d bytes, want %d within %d", len(decodeLinkAddrs(enc)), len(enc), maxLinkAddrs, members.MaxNodeData)
	}
	if got := decodeLinkAddrs(append(EncodeLinkAddrs(want[:1]), 1, 2, 3)); len(got) != 1 {
		t.Errorf("trailing bytes decoded as %v", got)
	}
}

// TestSpeakerLinks: the set is complete when every other node published
// its addresses, or runs no speaker (not up, no live Lease).
func TestSpeakerLinks(t *testing.T) {
	data := map[string][]byte{"a": EncodeLinkAddrs([]net.HardwareAddr{mac(2), mac(1)}), "b": EncodeLinkAddrs([]net.HardwareAddr{mac(3)})}
	for _, tc := range []struct {
		name            string
		states          map[string]members.State
		live            map[string]bool
		wantComplete    bool
		wantUnpublished []string
	}{
		{"all published", map[string]members.State{"a": members.Alive, "b": members.Dead, "c": members.Unknown}, nil, true, []string{"c"}},
		{"a member up that published nothing (an older speaker)", map[string]members.State{"a": members.Alive, "b": members.Alive, "c": members.Suspect}, nil, false, nil},
		{"never seen, its speaker's Lease live", map[string]members.State{"a": members.Alive, "b": members.Alive}, map[string]bool{"c": true}, false, []string{"c"}},
		{"dead without data, Lease live", map[string]members.State{"a": members.Alive, "c": members.Dead}, map[string]bool{"c": true}, false, []string{"c"}},
		{"left without data, no Lease", map[string]members.State{"a": members.Alive, "c": members.Left}, nil, true, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			macs, complete, unpublished := speakerLinks([]string{"a", "b", "c"},
				func(n string) members.State { return tc.states[n] },
				func(n string) []byte { return data[n] },
				func(n string) bool { return tc.live[n] })
			if want := []net.HardwareAddr{mac(1), mac(2), mac(3)}; !slices.EqualFunc(macs, want, sameMAC) {
				t.Errorf("macs %v, want %v", macs, want)
			}
			if complete != tc.wantComplete || !slices.Equal(unpublished, tc.wantUnpublished) {
				t.Errorf("complete %v, unpublished %v; want %v, %v", complete, unpublished, tc.wantComplete, tc.wantUnpublished)
			}
		})
	}
}

// dataMembers is a member list whose members published data.
type dataMembers struct {
	fakeMembers
	data map[string][]byte
}

func (d *dataMembers) NodeData(n string) []byte { return d.data[n] }

// macsL2 is an L2 backend that records the speaker MACs it is told.
type macsL2 struct {
	calls []string
}

func (*macsL2) SetAnnouncements([]layer2.Announcement) {}
func (*macsL2) Interfaces(netip.Addr) []string         { return nil }
func (l *macsL2) SetSpeakerMACs(macs []net.HardwareAddr, complete bool) {
	l.calls = append(l.calls, macsKey(macs, complete))
}

func (l *macsL2) expect(t *testing.T, want ...string) {
	t.Helper()
	if !slices.Equal(l.calls, want) {
		t.Fatalf("SetSpeakerMACs calls %q, want %q", l.calls, want)
	}
	l.calls = nil
}

// TestSpeakerMACsReachTheL2Backend: each reconcile's liveness step hands
// the L2 backend the MACs the other members published, complete only
// once the member list has settled and the nodes that published none run
// no speaker (their Leases read: none fresh), and only when that changed.
func TestSpeakerMACsReachTheL2Backend(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ml := &dataMembers{
		fakeMembers: fakeMembers{states: map[string]members.State{"node2": members.Alive, "node3": members.Dead}},
		data:        map[string][]byte{"node2": EncodeLinkAddrs([]net.HardwareAddr{mac(2)}), "node3": EncodeLinkAddrs([]net.HardwareAddr{mac(3)})},
	}
	s, _ := livenessSpeaker(t, &now, ml, lease("node5", now, 15))
	l2 := &macsL2{}
	s.liveness.fence = l2
	nodes := nodeList("node1", "node2", "node3", "node4")
	known := "02:00:00:00:00:02 02:00:00:00:00:03 "

	s.liveness.observe(nodes)
	l2.expect(t, known) // the member list has not settled
	ml.settled = true
	s.liveness.observe(nodes)
	l2.expect(t) // node4 (never seen) published nothing and its Lease is unread
	s.liveness.leases.poll(context.Background())
	s.liveness.observe(nodes)
	l2.expect(t, known+"complete") // node4 has no Lease: no speaker runs there
	s.liveness.observe(nodes)
	l2.expect(t) // unchanged

	// node5, dead before this speaker started and reported by another
	// member (no data), still renews its Lease: a partition, maybe.
	ml.states["node5"] = members.Dead
	nodes = nodeList("node1", "node2", "node3", "node4", "node5")
	s.liveness.observe(nodes)
	l2.expect(t, known)
	s.liveness.leases.poll(context.Background())
	s.liveness.observe(nodes)
	l2.expect(t)
	now = now.Add(20 * time.Second) // its Lease expired
	s.liveness.observe(nodes)
	l2.expect(t, known+"complete")

	// node2 restarts as an older speaker that publishes nothing.
	delete(ml.data, "node2")
	s.liveness.observe(nodes)
	l2.expect(t, "02:00:00:00:00:03 ")
}
