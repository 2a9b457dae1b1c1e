package bgp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
)

// otherExternalASN is a second external AS for the router.
const otherExternalASN = 64520

// TestDynamicASN: a BGPPeer with dynamicASN external instead of a
// peerASN. The router's AS changes from one external value to another:
// the sessions come back, each node's SpeakerStatus says which AS they
// came up with, the route is in the router's FIB and HTTP from the
// external client reaches the pod. Then the router takes the nodes' own
// AS (internal): every node refuses it and says why in its SpeakerStatus.
func TestDynamicASN(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	apply(t, h, peerYAML(peerV4, "dynamicASN: external"))
	all := allNodes(l)
	_, ips := suite.Service(t, "dynasn", poolMain, nil, all...)
	waitPeerASN(t, l, lab.RouterASN, "")

	reconfigureRouter(t, l, lab.FRR, lab.BGPOptions{ASN: otherExternalASN})
	start := time.Now()
	waitSessions(t, l, 60*time.Second, nodeAddrs(l, false)...)
	waitPeerASN(t, l, otherExternalASN, "")
	waitFIB(t, l, host(ips[0]), all...)
	t.Logf("router AS %d → %d: sessions and route back in %s", lab.RouterASN, otherExternalASN, time.Since(start).Round(time.Millisecond))
	var answer lab.PodAnswer
	labkit.Eventually(t, 30*time.Second, "an HTTP answer through "+ips[0].String(), func() bool {
		var err error
		answer, err = l.HTTPGet(ctx, lab.External, ips[0], 80)
		return err == nil
	})
	t.Logf("http://%s answered by %s on %s", ips[0], answer.Pod, answer.Node)

	// the router in the nodes' AS: internal, the other class
	if err := l.ReconfigureRouter(ctx, lab.FRR, lab.BGPOptions{ASN: lab.NodeASN, NodeASN: lab.NodeASN}); err != nil {
		t.Fatal(err)
	}
	msg := waitPeerASN(t, l, 0, "is myASN (internal) and spec.dynamicASN is external")
	t.Logf("router AS %d (internal) refused: %q", lab.NodeASN, msg)
}

// waitPeerASN waits until every node's SpeakerStatus reports the peer
// router's session up with AS asn (asn 0: not up, with a message holding
// fragment) and returns one message.
func waitPeerASN(t *testing.T, l *lab.Lab, asn int64, fragment string) string {
	t.Helper()
	hc := heraldClient(t, l)
	var msg string
	labkit.EventuallyWhy(t, 60*time.Second, "SpeakerStatus of "+peerV4, func() (bool, string) {
		var got []string
		ok := true
		for _, n := range allNodes(l) {
			s := sessionStatus(hc, n, peerV4)
			got = append(got, fmt.Sprintf("%s: %s AS %d %q", n, s.State, s.PeerASN, s.Message))
			if asn != 0 {
				ok = ok && s.State == "Established" && s.PeerASN == asn
			} else {
				ok = ok && s.State != "Established" && strings.Contains(s.Message, fragment)
				msg = s.Message
			}
		}
		return ok, fmt.Sprintf("%v, want AS %d %q", got, asn, fragment)
	})
	return msg
}

// sessionStatus is node's entry for peer in its SpeakerStatus (zero when
// absent).
func sessionStatus(hc versioned.Interface, node, peer string) v1beta1.BGPSessionStatus {
	st, err := hc.HeraldV1beta1().SpeakerStatuses().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return v1beta1.BGPSessionStatus{}
	}
	for _, s := range st.Status.BGP {
		if s.Peer == peer {
			return s
		}
	}
	return v1beta1.BGPSessionStatus{}
}
