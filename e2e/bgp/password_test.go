package bgp

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

const routerPassword = "herald-md5"

// TestPassword: the router lists the nodes as static neighbors with a TCP
// MD5 password. Without a password, with a missing Secret and with a wrong
// password no session comes up and the BGPPeer says why (the Valid
// condition for the missing Secret, SessionProblem events for the rest);
// with the right password every session is established and the route is
// there.
func TestPassword(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	var static []lab.StaticNeighbor
	for _, n := range allNodes(l) {
		static = append(static, lab.StaticNeighbor{Node: n, Password: routerPassword})
	}
	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{StaticNeighbors: static})
	all := allNodes(l)
	_, ips := suite.Service(t, "md5", poolMain, nil, all...)

	// no password: the router drops the SYNs, the speakers report it
	msg := waitEvent(t, l, "BGPPeer", peerV4, "SessionProblem", "not established")
	t.Logf("no password: SessionProblem %q", msg)
	noSessions(t, l)

	// a Secret that does not exist
	apply(t, h, peerYAML(peerV4, "passwordSecret: router-md5"))
	c := waitPeerCondition(t, l, peerV4, metav1.ConditionFalse, "SecretNotFound")
	t.Logf("missing Secret: Valid=%s %s: %s", c.Status, c.Reason, c.Message)

	// a wrong password
	secrets := l.Client().CoreV1().Secrets(deploy.Namespace)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "router-md5", Namespace: deploy.Namespace},
		StringData: map[string]string{"password": "not-" + routerPassword}}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secret.Name, metav1.DeleteOptions{}) })
	waitPeerCondition(t, l, peerV4, metav1.ConditionTrue, "")
	msg = waitEvent(t, l, "BGPPeer", peerV4, "SessionProblem", "TCP MD5 password set")
	t.Logf("wrong password: SessionProblem %q", msg)
	noSessions(t, l)

	// the right one
	secret.StringData["password"] = routerPassword
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	for a, p := range neighbors(t, l) {
		if p.Up() && p.Dynamic {
			t.Errorf("session with %s came through the listen range, want the static neighbor with the password", a)
		}
	}
	waitFIB(t, l, host(ips[0]), all...)
	for _, n := range all {
		waitEvent(t, l, "BGPPeer", peerV4, "SessionEstablished", "node "+n+": session with "+lab.RouterIPv4+" established")
	}

	// The Secret deleted and created again (a GitOps tool replacing it, a
	// rotation by delete and create): the peer keeps its last password in
	// force, so no session drops and the route stays.
	before := neighbors(t, l)
	if err := secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c = waitPeerCondition(t, l, peerV4, metav1.ConditionFalse, "SecretNotFound")
	if !strings.Contains(c.Message, "keeping the last valid version") {
		t.Errorf("Secret deleted: Valid=False %q, want it to say it keeps the last valid version", c.Message)
	}
	t.Logf("Secret deleted: Valid=%s %s: %s", c.Status, c.Reason, c.Message)
	sessionsStay(t, l, ips[0], all, 2*peerKeepalive)
	secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "router-md5", Namespace: deploy.Namespace},
		StringData: map[string]string{"password": routerPassword}}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPeerCondition(t, l, peerV4, metav1.ConditionTrue, "")
	sessionsStay(t, l, ips[0], all, peerKeepalive)
	after := neighbors(t, l)
	for _, a := range nodeAddrs(l, false) {
		if b, n := before[a], after[a]; n.Established != b.Established || n.Dropped != b.Dropped {
			t.Errorf("session with %s went down while the Secret was recreated: established %d → %d, dropped %d → %d",
				a, b.Established, n.Established, b.Dropped, n.Dropped)
		}
	}
}

// peerKeepalive is peerWithSecret's keepalive time.
const peerKeepalive = 3 * time.Second

// sessionsStay checks, for a while, that every node's session stays
// established and the router keeps ip's route through all nodes.
func sessionsStay(t *testing.T, l *lab.Lab, ip netip.Addr, nodes []string, d time.Duration) {
	t.Helper()
	want := nodeAddrs(l, false)
	slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if up := established(t, l); !slices.Equal(up, want) {
			t.Fatalf("sessions established with %v, want %v", up, want)
		}
		if r := route(t, l, host(ip)); !slices.Equal(sortedNodes(r), sorted) {
			t.Fatalf("router FIB for %s via %v, want %v", ip, sortedNodes(r), sorted)
		}
	}
}

// noSessions checks that the router has no established session now and
// over a short monitored window.
func noSessions(t *testing.T, l *lab.Lab) {
	t.Helper()
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if up := established(t, l); len(up) > 0 {
			t.Fatalf("sessions established with %v, want none", up)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPeerCondition waits for the BGPPeer's Valid condition (with reason,
// unless empty) and returns it.
func waitPeerCondition(t *testing.T, l *lab.Lab, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	hc := heraldClient(t, l)
	var c metav1.Condition
	labkit.Eventually(t, 30*time.Second, "BGPPeer "+name+" Valid="+string(status)+" "+reason, func() bool {
		p, err := hc.HeraldV1beta1().BGPPeers().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cc := range p.Status.Conditions {
			if cc.Type == v1beta1.ConditionValid && cc.Status == status && (reason == "" || cc.Reason == reason) &&
				cc.ObservedGeneration == p.Generation {
				c = cc
				return true
			}
		}
		return false
	})
	return c
}
