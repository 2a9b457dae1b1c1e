package layer2

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Protocol label values.
const (
	protoARP = "arp"
	protoNDP = "ndp"
)

// metrics are the herald_l2_* counters, labelled by interface and protocol.
type metrics struct {
	requests   *prometheus.CounterVec
	responses  *prometheus.CounterVec
	gratuitous *prometheus.CounterVec
	handovers  *prometheus.CounterVec
	malformed  *prometheus.CounterVec
	conflicts  *prometheus.CounterVec
	// foreignClaims: announcements of an owned VIP by a host that runs
	// no speaker, which the fence did not yield to.
	foreignClaims *prometheus.CounterVec
	// fenceLifted: fences lifted because the winner no longer answered.
	fenceLifted *prometheus.CounterVec
	// answerDelay: from the kernel receiving a request to the answer
	// being sent.
	answerDelay *prometheus.HistogramVec
	// pauses: pauses of this process detected (pause.go).
	pauses prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"interface", "protocol"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "herald", Subsystem: "l2", Name: name, Help: help,
		}, labels)
	}
	m := &metrics{
		requests: counter("requests_received_total",
			"ARP requests and neighbour solicitations received for a VIP this node announces."),
		responses: counter("responses_sent_total",
			"ARP replies and solicited neighbour advertisements sent for a VIP."),
		gratuitous: counter("gratuitous_sent_total",
			"Gratuitous ARP replies and unsolicited neighbour advertisements sent for a VIP."),
		handovers: counter("handovers_total",
			"VIPs this node was releasing that another host announced, after which this node stopped answering for them."),
		malformed: counter("malformed_frames_total",
			"ARP and NDP frames read that did not parse (truncated, bad lengths, bad checksum); each is skipped."),
		foreignClaims: counter("foreign_claims_total",
			"Announcements of a VIP this node owns by a host that is not another speaker's node (a misconfigured or hostile host): this node kept answering and announced the VIP again."),
		fenceLifted: counter("fence_lifted_total",
			"VIPs this node had lost the split-brain fence for and answers again: the winner said it gave them up, no longer answered for them, or the member list healed."),
	}
	m.conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "herald", Subsystem: "l2", Name: "conflicts_total",
		Help: "Another host announced a VIP this node announces (split brain): result=won (this node keeps it) or lost (it stopped answering).",
	}, []string{"interface", "protocol", "result"})
	m.answerDelay = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "herald", Subsystem: "l2", Name: "answer_delay_seconds",
		Help:    "Time from the kernel receiving an ARP request or a neighbour solicitation for a VIP to the answer being sent: the speaker's own delay (scheduling, CPU starvation).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, labels)
	m.pauses = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "herald", Subsystem: "l2", Name: "pauses_total",
		Help: "Times this speaker found it had not been scheduled for longer than the member list's quickest detection (a pause of its node) and answered none of its addresses until it knew who answers them.",
	})
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.responses, m.gratuitous, m.handovers, m.malformed, m.conflicts, m.foreignClaims, m.fenceLifted, m.answerDelay, m.pauses} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register layer2 metrics: %w", err)
		}
	}
	return m, nil
}
