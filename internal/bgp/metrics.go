package bgp

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is a prometheus.Collector reading the speaker's sessions at
// scrape time: herald_bgp_session_up, herald_bgp_bfd_up (sessions with a
// BFD profile only), herald_bgp_paths_advertised and
// herald_bgp_updates_sent_total, all labelled by session name.
//
// The update counter comes from GoBGP's per-neighbor message counters,
// which restart at zero when a neighbor is re-created; totals are kept
// here so the exported counter only grows.
type metrics struct {
	snapshot func(context.Context) []sessionView
	up       *prometheus.Desc
	bfd      *prometheus.Desc
	paths    *prometheus.Desc
	updates  *prometheus.Desc

	mu     sync.Mutex
	totals map[string]*updateTotal
}

type updateTotal struct {
	last  uint64 // GoBGP's counter at the last observation
	total float64
}

func newMetrics(reg prometheus.Registerer, snapshot func(context.Context) []sessionView) (*metrics, error) {
	m := &metrics{
		snapshot: snapshot,
		up: prometheus.NewDesc("herald_bgp_session_up",
			"1 when the BGP session is Established, else 0.", []string{"peer"}, nil),
		bfd: prometheus.NewDesc("herald_bgp_bfd_up",
			"1 when the BGP session's BFD session is Up, else 0; only for sessions with a BFD profile.", []string{"peer"}, nil),
		paths: prometheus.NewDesc("herald_bgp_paths_advertised",
			"Paths currently advertised on the BGP session.", []string{"peer"}, nil),
		updates: prometheus.NewDesc("herald_bgp_updates_sent_total",
			"BGP UPDATE messages sent on the session.", []string{"peer"}, nil),
		totals: map[string]*updateTotal{},
	}
	if reg == nil {
		return m, nil
	}
	if err := reg.Register(m); err != nil {
		return nil, fmt.Errorf("register bgp metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.up
	ch <- m.bfd
	ch <- m.paths
	ch <- m.updates
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	views := m.snapshot(context.Background())
	m.observe(views)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range views {
		up := 0.0
		if v.up {
			up = 1
		}
		ch <- constMetric(m.up, prometheus.GaugeValue, up, v.Name)
		if v.bfd {
			bfd := 0.0
			if v.BFD == "Up" {
				bfd = 1
			}
			ch <- constMetric(m.bfd, prometheus.GaugeValue, bfd, v.Name)
		}
		ch <- constMetric(m.paths, prometheus.GaugeValue, float64(v.PathsAdvertised), v.Name)
		total := 0.0
		if t := m.totals[v.Name]; t != nil {
			total = t.total
		}
		ch <- constMetric(m.updates, prometheus.CounterValue, total, v.Name)
	}
}

// observe folds GoBGP's current counters into the totals.
func (m *metrics) observe(views []sessionView) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, v := range views {
		seen[v.Name] = true
		if !v.live {
			continue // no fresh counter: keep the last one
		}
		t := m.totals[v.Name]
		if t == nil {
			t = &updateTotal{}
			m.totals[v.Name] = t
		}
		if v.updatesSent >= t.last {
			t.total += float64(v.updatesSent - t.last)
		} else {
			t.total += float64(v.updatesSent)
		}
		t.last = v.updatesSent
	}
	for n := range m.totals {
		if !seen[n] {
			delete(m.totals, n)
		}
	}
}

// restart tells that a session's GoBGP neighbor was deleted: its next
// counter starts from zero.
func (m *metrics) restart(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.totals[name]; t != nil {
		t.last = 0
	}
}

func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, label string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, label)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
