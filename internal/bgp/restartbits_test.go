package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v4/api"

	"github.com/herald-lb/herald/test/labkit"
)

// grBits are the graceful-restart flags a router received in the
// speaker's OPEN: the Restart State bit, and the Forwarding State bit of
// each family.
type grBits struct {
	ok       bool // the capability was received
	restart  bool
	forwards map[string]bool
}

// receivedGR reads the graceful-restart capability r received from the
// speaker on its current session.
func receivedGR(t *testing.T, r *testRouter) grBits {
	t.Helper()
	var b grBits
	err := r.srv.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
		for _, c := range p.GetState().GetRemoteCap() {
			gr := c.GetGracefulRestart()
			if gr == nil {
				continue
			}
			b = grBits{ok: true, restart: gr.GetFlags()&0x08 != 0, forwards: map[string]bool{}}
			for _, tu := range gr.GetTuples() {
				b.forwards[tu.GetFamily().GetAfi().String()] = tu.GetFlags()&0x80 != 0
			}
		}
	})
	must(t, err)
	return b
}

// TestRestartedServerKeepsForwardingState: the graceful-restart sessions
// a newly started server opens carry the Restart State bit and, for
// every family, the Forwarding State bit, so that a router holding this
// node's routes from before the restart keeps them until they are sent
// again (RFC 4724 4.2: without the Forwarding State bit FRR drops them the
// moment the session is back). The paths still reach the router at once.
// A session that a running server recreates later carries neither bit.
func TestRestartedServerKeepsForwardingState(t *testing.T) {
	r := startRouter(t, "127.0.0.3", routerASN, loSpeaker, speakerASN)
	s, _ := newTestSpeaker(t, nil)
	ss := loSession("r1", r, routerASN)
	ss.GracefulRestart = true
	d := Desired{NodeIPv4: nodeV4, NodeIPv6: loNodeV6, Sessions: []Session{ss}, Paths: []Path{{Prefix: vip4}, {Prefix: vip6}}}
	apply(t, s, d)
	waitUp(t, s, "r1")
	got := receivedGR(t, r)
	if !got.ok || !got.restart || len(got.forwards) != 2 || !got.forwards["AFI_IP"] || !got.forwards["AFI_IP6"] {
		t.Errorf("first session of a new server: received %+v, want the restart bit and both families' forwarding bits", got)
	}
	waitRoutes(t, r, "both paths at the router", func(rs map[netip.Prefix]route) bool {
		_, v4 := rs[vip4]
		_, v6 := rs[vip6]
		return v4 && v6
	})

	// a changed hold time recreates the session on the running server
	d.Sessions[0].HoldTime = 12 * time.Second
	apply(t, s, d)
	labkit.EventuallyWhy(t, waitLong, "r1 re-established", func() (bool, string) {
		return r.establishedCount() == 2 && sessionNamed(t, s, "r1").State == stateEstablished,
			fmt.Sprintf("r1 established %d times", r.establishedCount())
	})
	got = receivedGR(t, r)
	if !got.ok || got.restart || got.forwards["AFI_IP"] || got.forwards["AFI_IP6"] {
		t.Errorf("session recreated by a running server: received %+v, want graceful restart without the restart and forwarding bits", got)
	}
}
