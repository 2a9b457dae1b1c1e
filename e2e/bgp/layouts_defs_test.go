package bgp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/e2e/lab/routerconf"
)

// layout is one way of peering the nodes with the router, as
// docs/bgp-layouts.md describes it, for BenchmarkBGPLayouts.
type layout struct {
	name string
	// noBFD says why the layout has no BFD variant ("": it has one).
	noBFD string
	// prepare readies the lab for the layout (links, capabilities) for
	// the rest of the benchmark; a non-empty answer is why the layout
	// cannot run here.
	prepare func(b *testing.B, l *lab.Lab, h *deploy.Herald) string
	router  func(l *lab.Lab, bfd bool) lab.BGPOptions
	peer    func(bfd bool) string
	// sessions counts the nodes whose session of the layout is
	// established, as the router (or the node router) sees it.
	sessions func(t testing.TB, l *lab.Lab) int
	// ready waits for what the router needs before Herald's peer is
	// applied (the node routers' own sessions).
	ready func(t testing.TB, l *lab.Lab)
}

// Timers of the two variants of every layout: hold time 3 s without BFD;
// BFD 100 ms x 3 (profile "fast" of the base configuration) with the
// default hold time.
var (
	holdTimers = []string{"holdTime: 3s", "keepaliveTime: 1s"}
	bfdTimers  = []string{"bfdProfile: fast"}
	routerBFD  = routerconf.BFD{TransmitMS: 100, ReceiveMS: 100, Multiplier: 3}
)

// variantTimers returns the BGPPeer lines of a variant.
func variantTimers(bfd bool) []string {
	if bfd {
		return bfdTimers
	}
	return holdTimers
}

// routerTimers sets the router's timers of a variant: hold time 3 s, or
// BFD 100 ms x 3 with the default hold time.
func routerTimers(o lab.BGPOptions, bfd bool) lab.BGPOptions {
	if bfd {
		o.BFD = routerBFD
	} else {
		o.HoldTime, o.Keepalive = 3, 1
	}
	return o
}

// staticNeighbors are router-side neighbours for every node (GoBGP
// v4.8.0's BFD needs them: docs/gobgp.md).
func staticNeighbors(l *lab.Lab, bfd, dials bool) []lab.StaticNeighbor {
	var ns []lab.StaticNeighbor
	for _, n := range allNodes(l) {
		ns = append(ns, lab.StaticNeighbor{Node: n, BFD: bfd, RouterDials: dials})
	}
	return ns
}

// numberedSessions counts the nodes' IPv4 sessions up at the router.
func numberedSessions(t testing.TB, l *lab.Lab) int { return len(established(t, l)) }

func bgpLayouts() []layout {
	numbered := func(l *lab.Lab, bfd bool) lab.BGPOptions {
		o := lab.BGPOptions{}
		if bfd {
			o.StaticNeighbors = staticNeighbors(l, true, false)
		}
		return routerTimers(o, bfd)
	}
	return []layout{
		{
			name:     "Numbered",
			router:   numbered,
			peer:     func(bfd bool) string { return peerYAML(peerV4, variantTimers(bfd)...) },
			sessions: numberedSessions,
		},
		{
			name: "Unnumbered",
			prepare: func(b *testing.B, l *lab.Lab, _ *deploy.Herald) string {
				if err := l.AddUnnumberedLinks(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.RemoveUnnumberedLinks(context.Background()) })
				return ""
			},
			router: func(l *lab.Lab, bfd bool) lab.BGPOptions {
				return routerTimers(lab.BGPOptions{Unnumbered: true, UnnumberedBFD: bfd}, bfd)
			},
			peer: func(bfd bool) string { return unnumberedPeer(variantTimers(bfd)...) },
			sessions: func(t testing.TB, l *lab.Lab) int {
				n := 0
				for _, st := range unnumberedStates(t, l) {
					if st == "Established" {
						n++
					}
				}
				return n
			},
		},
		{
			name: "Passive",
			prepare: func(b *testing.B, _ *lab.Lab, h *deploy.Herald) string {
				grantBindService(b, h)
				return ""
			},
			router: func(l *lab.Lab, bfd bool) lab.BGPOptions {
				return routerTimers(lab.BGPOptions{StaticNeighbors: staticNeighbors(l, bfd, true)}, bfd)
			},
			peer:     func(bfd bool) string { return peerYAML(peerV4, append(variantTimers(bfd), "passive: true")...) },
			sessions: numberedSessions,
		},
		{
			name:     "DynamicASN",
			router:   numbered,
			peer:     func(bfd bool) string { return peerYAML(peerV4, append(variantTimers(bfd), "dynamicASN: external")...) },
			sessions: numberedSessions,
		},
		{
			name:  "NodeRouter",
			noBFD: "n/a: the ToR drops a node when the node router's session ends; Herald's BFD would watch loopback only",
			router: func(_ *lab.Lab, _ bool) lab.BGPOptions {
				return routerTimers(lab.BGPOptions{NodeRouters: true}, false)
			},
			peer: func(bool) string { return nodeRouterPeer() },
			ready: func(t testing.TB, l *lab.Lab) {
				waitSessions(t, l, 60*time.Second, append(nodeAddrs(l, false), nodeAddrs(l, true)...)...)
			},
			sessions: func(t testing.TB, l *lab.Lab) int {
				n := 0
				for _, node := range allNodes(l) {
					out, err := l.NodeRouterCLI(context.Background(), node, "show protocols herald")
					if err == nil && strings.Contains(out, "Established") {
						n++
					}
				}
				return n
			},
		},
		{
			name:  "VRF",
			noBFD: "n/a: GoBGP runs BFD in the default VRF only",
			prepare: func(b *testing.B, l *lab.Lab, _ *deploy.Herald) string {
				b.Cleanup(func() { _ = l.RemoveVRFUplinks(context.Background()) })
				if err := l.AddVRFUplinks(context.Background(), vrfName); errors.Is(err, lab.ErrNoVRFDriver) {
					b.Log(err)
					return "cannot run here: the kernel has no VRF driver (CONFIG_NET_VRF); TestVRFUplinks skips too"
				} else if err != nil {
					b.Fatal(err)
				}
				return "not measured here: TestVRFUplinks proves the layout, without figures"
			},
		},
	}
}

// unnumberedPeer is peerUnnumbered with other timer lines.
func unnumberedPeer(timers ...string) string {
	return fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: %s}
spec:
  myASN: %d
  dynamicASN: external
  interface: %s
  connectTime: 2s
  %s
`, peerV4, lab.NodeASN, lab.UnnumberedNodeIf, strings.Join(timers, "\n  "))
}

// nodeRouterPeer is TestNodeRouter's BGPPeer with hold time 3 s.
func nodeRouterPeer() string {
	return fmt.Sprintf(`
apiVersion: herald.dev/v1beta1
kind: BGPPeer
metadata: {name: %s}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: %s
  sourceAddress: %s
  holdTime: 3s
  keepaliveTime: 1s
  connectTime: 2s
`, peerV4, lab.NodeRouterHeraldASN, lab.NodeASN, lab.NodeRouterAddress, lab.NodeRouterHeraldAddress)
}

// layoutFigures are one variant's medians, for the summary table.
