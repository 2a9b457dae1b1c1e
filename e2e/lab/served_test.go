package lab

import (
	"strings"
	"testing"
	"time"
)

func TestServed(t *testing.T) {
	const a, b = "02:00:c6:33:64:0b", "02:00:c6:33:64:0c"
	// probes every 20 ms: probe i sent at 20*i ms
	log := func(macs ...[]string) ProbeLog {
		var out ProbeLog
		for i, m := range macs {
			out = append(out, probeAt(i+1, 20*i, m...))
		}
		return out
	}
	one, two, none := []string{a}, []string{a, b}, []string(nil)
	tight := Limits{MaxGap: 40 * time.Millisecond, LongGap: 20 * time.Millisecond}
	for _, c := range []struct {
		name     string
		log      ProbeLog
		lim      Limits
		problems []string // a fragment of each problem, in order
		notes    int
	}{
		{"empty", nil, tight, []string{"no probes"}, 0},
		{"answered throughout", log(one, one, one), tight, nil, 0},
		{"gap at the limit", log(one, none, none, one), tight, nil, 1},
		{"gap over the limit", log(one, none, none, none, one), tight, []string{"no answer for 60ms"}, 0},
		{"one double answer at a hand-over", log(one, two, one), tight, nil, 0},
		{"two nodes side by side", log(one, two, two, one), tight, []string{"2 probes answered by two nodes"}, 0},
		{"side by side within the overlap", log(one, two, two, one), tight.WithOverlap(40 * time.Millisecond), nil, 0},
		{"side by side beyond the overlap", log(one, two, two, two, one), tight.WithOverlap(40 * time.Millisecond), []string{"side by side for 60ms"}, 0},
		{"both at once", log(one, none, none, none, two, two, one), tight, []string{"no answer", "side by side"}, 0},
	} {
		v := c.log.Served(c.lim)
		if len(v.Problems) != len(c.problems) || len(v.Notes) != c.notes {
			t.Errorf("%s: problems %q notes %q; want %d problems, %d notes", c.name, v.Problems, v.Notes, len(c.problems), c.notes)
			continue
		}
		for i, p := range c.problems {
			if !strings.Contains(v.Problems[i], p) {
				t.Errorf("%s: problem %q lacks %q", c.name, v.Problems[i], p)
			}
		}
		if v.Summary == "" {
			t.Errorf("%s: no summary", c.name)
		}
	}
	if r := Rolling(); r.MaxGap != MaxGap || r.MaxOverlap != HandOverOverlap || Steady().MaxOverlap != 0 {
		t.Errorf("named limits: Rolling %+v, Steady %+v", r, Steady())
	}
}
