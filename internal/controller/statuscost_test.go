package controller_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/controller"
	"github.com/herald-lb/herald/internal/speaker"
)

// BenchmarkSpeakerStatusWrites measures what the SpeakerStatuses cost the
// API server: 3 nodes with real speakers (L2, or BGP with one established
// session each) and the controller, 10 Services, and a churn of one
// Service replaced (one deleted, one created) every period, for a window
// of 30 s after the start settled. It reports SpeakerStatus writes per
// minute (every ADDED or MODIFIED a watch sees) and Service writes per
// minute (creates and the controller's status and annotation writes, for scale).
//
//	go test -run XXX -bench SpeakerStatusWrites -benchtime 1x ./internal/controller/
func BenchmarkSpeakerStatusWrites(b *testing.B) {
	for _, mode := range []string{"l2", "bgp"} {
		for _, period := range []time.Duration{6 * time.Second, time.Second} {
			b.Run(fmt.Sprintf("%s/replace-every-%s", mode, period), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					statusCost(b, mode, period, 30*time.Second)
				}
			})
		}
	}
}

func statusCost(b *testing.B, mode string, period, window time.Duration) {
	e := newEnv(b)
	prefix := e.ns[:6] + "-"
	nodes := []string{prefix + "n1", prefix + "n2", prefix + "n3"}
	e.nodes(nodes...)
	e.pool("bench", nil, "2001:db8:f::/120")
	var newBGP func() speaker.BGP
	h := e.herald.HeraldV1beta1()
	if mode == "l2" {
		e.l2Everywhere("bench")
	} else {
		newBGP = func() speaker.BGP { return &establishedBGP{} }
		if _, err := h.BGPPeers().Create(e.ctx, &v1beta1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: "tor"},
			Spec: v1beta1.BGPPeerSpec{MyASN: 64513, PeerASN: 64512, PeerAddress: "2001:db8:1::1"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.BGPAdvertisements().Create(e.ctx, &v1beta1.BGPAdvertisement{ObjectMeta: metav1.ObjectMeta{Name: "all"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	e.startSpeakers(newBGP, speaker.DefaultStatusInterval, nodes...)
	// The release hold of the controller's flag default: a replaced
	// Service's address is not handed to the next one at once.
	e.startController(controller.Options{ReleaseHold: 5 * time.Second})
	next := 0
	add := func() string {
		name := fmt.Sprintf("svc-%03d", next)
		next++
		e.svc(name, ipv6OnlySvc)
		if mode == "bgp" {
			e.endpointsOn(name, nodes[next%3]) // BGP advertises a Service with a ready endpoint
		}
		return name
	}
	var live []string
	for range 10 {
		live = append(live, add())
	}
	for _, n := range live {
		e.waitCondition(n, v1beta1.ConditionAnnounced, metav1.ConditionTrue, "Announced")
	}
	// Watches from the current resourceVersion see only later writes.
	sl, err := h.SpeakerStatuses().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	statusW, err := h.SpeakerStatuses().Watch(e.ctx, metav1.ListOptions{ResourceVersion: sl.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer statusW.Stop()
	svl, err := e.kube.CoreV1().Services(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	svcW, err := e.kube.CoreV1().Services(e.ns).Watch(e.ctx, metav1.ListOptions{ResourceVersion: svl.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer svcW.Stop()
	statusWrites, svcWrites := 0, 0
	count := func(ev watch.Event, n *int) {
		if ev.Type == watch.Added || ev.Type == watch.Modified {
			*n++
		}
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	end := time.After(window)
	replaced := 0
	for done := false; !done; {
		select {
		case ev := <-statusW.ResultChan():
			count(ev, &statusWrites)
		case ev := <-svcW.ResultChan():
			count(ev, &svcWrites)
		case <-tick.C:
			e.deleteSvc(live[0])
			live = append(live[1:], add())
			replaced++
		case <-end:
			done = true
		}
	}
	perMin := func(n int) float64 { return float64(n) * float64(time.Minute) / float64(window) }
	b.ReportMetric(perMin(statusWrites), "status-writes/min")
	b.ReportMetric(perMin(svcWrites), "service-writes/min")
	b.ReportMetric(perMin(replaced), "replacements/min")
	b.Logf("%s, 3 nodes, one Service replaced every %s: %d replacements, %d SpeakerStatus writes, %d Service writes in %s",
		mode, period, replaced, statusWrites, svcWrites, window)
}
