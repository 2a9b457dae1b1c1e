package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/harness"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// spreadFailoverBound is the longest a spread address may stay dark when
// its owner's speaker is killed: the member list's detection (about
// 1.1 s p50 on 3 nodes with the default timings, failover.md) plus the
// new owner's first answer, with room for the lab's 2-core machine.
const spreadFailoverBound = 3 * time.Second

// TestSpreadAddressesFailOverAlone: a dual-stack Service asking for
// three addresses per family (herald.dev/address-count: "3") on three
// nodes is answered by three different MACs per family, and HTTP to
// each address reaches its pods. Killing one owner's speaker (and its
// link, as TestAbruptFailover) moves that node's two addresses only,
// within spreadFailoverBound; the other four keep their owner and are
// answered throughout. When the node comes back, its addresses come
// back to it, and the others still do not move.
func TestSpreadAddressesFailOverAlone(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	_, ips := suite.Service(t, "spread", poolL2, func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy = &p
		s.Annotations[v1beta1.AnnotationAddressCount] = "3"
	}, "node1", "node2", "node3")
	if len(ips) != 6 || !ips[2].Is4() || !ips[3].Is6() {
		t.Fatalf("addresses %v, want three IPv4 and three IPv6", ips)
	}
	owners := spreadOwners(t, l, ips)
	for _, ip := range ips {
		labkit.EventuallyWhy(t, 20*time.Second, "an HTTP answer through "+ip.String(), func() (bool, string) {
			a, err := l.HTTPGet(ctx, lab.External, ip, 80)
			if err != nil {
				return false, err.Error()
			}
			t.Logf("HTTP to %s (answered by %s) reached pod %s on %s", ip, owners[ip], a.Pod, a.Node)
			return true, ""
		})
	}

	victim := owners[ips[0]]
	mons := monitorAll(t, l, ips)
	watch, err := l.WatchGratuitous()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := h.Speakers[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLink(ctx, victim, false); err != nil {
		t.Fatal(err)
	}
	moved := map[netip.Addr]string{}
	for i, ip := range ips {
		if owners[ip] != victim {
			continue
		}
		waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		taken, err := mons[i].Wait(waitCtx, at, func(p lab.Probe) bool { return p.Answered() && p.Nodes()[0] != victim })
		cancel()
		if err != nil {
			t.Fatalf("no other node took %s over after %s's speaker was killed: %v", ip, victim, err)
		}
		moved[ip] = taken.Nodes()[0]
		took := taken.Sent.Sub(at)
		t.Logf("%s killed + link down: %s answered by %s after %v", victim, ip, moved[ip], took.Round(time.Millisecond))
		if took > spreadFailoverBound {
			t.Errorf("%s dark for %v after %s was killed, more than %v", ip, took.Round(time.Millisecond), victim, spreadFailoverBound)
		}
	}
	if len(moved) != 2 {
		t.Errorf("%s owned %d addresses, want one per family (owners %v)", victim, len(moved), owners)
	}
	// watch a little longer, for double answers after the take-over
	_, _ = mons[0].Wait(ctx, time.Now().Add(500*time.Millisecond), func(lab.Probe) bool { return true })
	announced, err := watch.Stop()
	if err != nil {
		t.Fatal(err)
	}
	for ip, to := range moved {
		if g, ok := announced.First(ip, to, at); ok {
			t.Logf("%s: gratuitous announcement from %s after %v", ip, to, g.At.Sub(at).Round(time.Millisecond))
		} else {
			t.Errorf("%s: %s sent no gratuitous announcement", ip, to)
		}
	}
	checkSpreadProbes(t, ips, mons, owners, moved, at)
	for ip, to := range moved {
		labkit.Eventually(t, 20*time.Second, fmt.Sprintf("an HTTP answer through %s from %s", ip, to), func() bool {
			_, err := l.HTTPGet(ctx, lab.External, ip, 80)
			return err == nil
		})
	}

	restore(t, l, h, victim)
	back := spreadOwners(t, l, ips)
	for _, ip := range ips {
		if back[ip] != owners[ip] {
			t.Errorf("after %s came back, %s answered by %s, by %s before the kill", victim, ip, back[ip], owners[ip])
		}
	}
}

// spreadOwners waits until each address has one owner and checks that
// each family's three addresses are answered by three different MACs.
func spreadOwners(t *testing.T, l *lab.Lab, ips []netip.Addr) map[netip.Addr]string {
	t.Helper()
	owners := map[netip.Addr]string{}
	macs := map[bool][]string{}
	labkit.EventuallyWhy(t, 30*time.Second, "each family's addresses answered by three MACs", func() (bool, string) {
		clear(macs)
		for _, ip := range ips {
			a := harness.Probe(t, l, ip)
			if len(a) != 1 {
				return false, fmt.Sprintf("%s answered by %d hosts", ip, len(a))
			}
			owners[ip] = a[0].Node
			macs[ip.Is4()] = append(macs[ip.Is4()], a[0].MAC.String())
		}
		for v4, m := range macs {
			if len(slices.Compact(slices.Sorted(slices.Values(m)))) != 3 {
				return false, fmt.Sprintf("IPv4 %v: MACs %v", v4, m)
			}
		}
		return true, ""
	})
	t.Logf("owners %v; MACs: IPv4 %v, IPv6 %v", owners, macs[true], macs[false])
	return owners
}

// checkSpreadProbes: the addresses that did not move were answered
// throughout by their owner alone (Steady); the moved ones, by one node
// at a time.
func checkSpreadProbes(t *testing.T, ips []netip.Addr, mons []*lab.Monitor, owners, moved map[netip.Addr]string, at time.Time) {
	t.Helper()
	for i, m := range mons {
		probes, err := m.Stop()
		if err != nil {
			t.Fatal(err)
		}
		after := probes.After(at)
		ip := ips[i]
		if _, ok := moved[ip]; ok {
			t.Logf("%s (moved): %d probes after the kill, %d unanswered, %d answered twice", ip, len(after), len(after.Unanswered()), len(after.Conflicts()))
			if c := after.Conflicts(); len(c) > 0 {
				t.Errorf("%s: %d probes answered by two nodes", ip, len(c))
			}
			continue
		}
		lab.CheckServed(t, fmt.Sprintf("%s (owner %s, not killed)", ip, owners[ip]), after, lab.Steady())
		for _, p := range after {
			if p.Answered() && !slices.Equal(p.Nodes(), []string{owners[ip]}) {
				t.Errorf("%s answered by %v at +%v, owner %s: it moved", ip, p.Nodes(), p.Sent.Sub(at).Round(time.Millisecond), owners[ip])
				break
			}
		}
	}
}
