package speaker

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	announced *prometheus.GaugeVec
	releasing prometheus.Gauge
	// held is 1 while the announcement hold Lease holds this speaker.
	held      prometheus.Gauge
	reconcile prometheus.Histogram
	// l2Plans counts L2 plans by kind: full (every address) or changed
	// (only the addresses of the Services that changed).
	l2Plans *prometheus.CounterVec
	// bgpApplies counts hand-overs to the BGP backend by kind: full
	// (every route) or changed (only the prefixes that changed).
	bgpApplies *prometheus.CounterVec
	// syncErrors counts failed reconciles and status writes.
	syncErrors *prometheus.CounterVec
	// statusWrites counts SpeakerStatus writes (creates and updates).
	statusWrites prometheus.Counter
	// keyMismatch counts the other speakers whose member-list keys cannot
	// exchange packets with this one's (keycheck.go).
	keyMismatch prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		announced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "announced",
			Help: "Addresses this node answers for in L2 mode (protocol=l2), and routes it advertises (protocol=bgp)."}, []string{"protocol"}),
		releasing: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "l2_releasing",
			Help: "Addresses this node is handing over to another node (it answers until the new owner announces itself)."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "announcements_held",
			Help: "1 while the Lease herald-announce-hold in Herald's namespace holds this speaker's announcements (no ARP/NDP answers, no BGP sessions)."}),
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "herald", Subsystem: "speaker", Name: "reconcile_duration_seconds",
			Help: "Time to compute and apply what this node announces.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		l2Plans: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "herald", Subsystem: "speaker", Name: "l2_plans_total",
			Help: "L2 decisions of what this node answers for, by kind: full (every address: at start, and when the configuration, the nodes, their liveness or the hold changed) or changed (only the addresses of the Services that changed)."}, []string{"kind"}),
		bgpApplies: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "herald", Subsystem: "speaker", Name: "bgp_applies_total",
			Help: "Hand-overs of this node's BGP sessions and routes to its BGP server, by kind: full (every route: at start, and when the configuration, the node or its addresses changed, or the last one was refused in part) or changed (only the prefixes of the Services that changed)."}, []string{"kind"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "herald", Subsystem: "speaker", Name: "sync_errors_total",
			Help: "Failed syncs, by sync: reconcile (what this node announces) or status (its SpeakerStatus); each is retried with backoff."}, []string{"sync"}),
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "herald", Subsystem: "speaker", Name: "status_writes_total",
			Help: "Writes of this node's SpeakerStatus (only when what it announces changed, at most one per --status-interval)."}),
		keyMismatch: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "member_key_mismatch",
			Help: "Other speakers, among those whose liveness Lease this one reads, whose member-list keys and this speaker's cannot read each other's packets: the member list is split (docs/security.md, the member-list Secret). Should be 0."}),
	}
	for _, c := range []prometheus.Collector{m.announced, m.releasing, m.held, m.reconcile, m.l2Plans, m.bgpApplies, m.syncErrors, m.statusWrites, m.keyMismatch} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
