package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/cache"
)

// TestIncompleteSet: the gauge is the number of Services last noted
// incomplete; noting one twice counts it once, and noting it complete
// (or forgetting it) removes it.
func TestIncompleteSet(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	s := newIncompleteSet(g)
	a, b := cache.ObjectName{Namespace: "ns", Name: "a"}, cache.ObjectName{Namespace: "ns", Name: "b"}
	steps := []struct {
		key        cache.ObjectName
		incomplete bool
		want       float64
	}{
		{a, false, 0},
		{a, true, 1},
		{a, true, 1},
		{b, true, 2},
		{a, false, 1},
		{a, false, 1},
		{b, false, 0},
	}
	for i, st := range steps {
		s.note(st.key, st.incomplete)
		if got := testutil.ToFloat64(g); got != st.want {
			t.Errorf("step %d (%s incomplete=%v): gauge %v, want %v", i, st.key, st.incomplete, got, st.want)
		}
	}
}
