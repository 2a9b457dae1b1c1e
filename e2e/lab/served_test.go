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

// TestServedBeside: a gap while a control went unanswered for longer than
// MaxGap is the lab's, one beside a shorter control gap is not; with
// StallsAreTheLab two nodes side by side with late answers are the lab's.
func TestServedBeside(t *testing.T) {
	const a, b = "02:00:c6:33:64:0b", "02:00:c6:33:64:0c"
	// probes every 20 ms from at ms on: probe i sent at at+20*i ms
	log := func(at int, macs ...[]string) ProbeLog {
		var out ProbeLog
		for i, m := range macs {
			out = append(out, probeAt(i+1, at+20*i, m...))
		}
		return out
	}
	late := func(pl ProbeLog, d time.Duration) ProbeLog {
		for i := range pl {
			for j := range pl[i].Answers {
				pl[i].Answers[j].At = pl[i].Sent.Add(d)
			}
		}
		return pl
	}
	one, two, none := []string{a}, []string{a, b}, []string(nil)
	lim := Limits{MaxGap: 40 * time.Millisecond}
	gap := log(0, one, none, none, none, one)    // 60 ms from 20 ms
	stalled := log(20, none, none, none, one)    // 60 ms from 20 ms
	short := log(20, none, none, one)            // 40 ms from 20 ms
	elsewhere := log(200, none, none, none, one) // 60 ms from 200 ms
	sideBySide := late(log(0, one, two, two, one), 50*time.Millisecond)
	for _, c := range []struct {
		name      string
		log       ProbeLog
		lim       Limits
		controls  []ProbeLog
		problems  int
		labsNotes int
	}{
		{"gap, no control", gap, lim, nil, 1, 0},
		{"gap while a control went unanswered longer", gap, lim, []ProbeLog{short, stalled}, 0, 1},
		{"gap beside a control gap within MaxGap", gap, lim, []ProbeLog{short}, 1, 0},
		{"gap beside a control gap at another time", gap, lim, []ProbeLog{elsewhere}, 1, 0},
		{"late answers side by side", sideBySide, lim, nil, 1, 0},
		{"late answers side by side, stalls the lab's", sideBySide, Limits{MaxGap: lim.MaxGap, StallsAreTheLab: true}, nil, 0, 1},
		{"prompt answers side by side, stalls the lab's", log(0, one, two, two, one), Limits{MaxGap: lim.MaxGap, StallsAreTheLab: true}, nil, 1, 0},
	} {
		v := c.log.ServedBeside(c.lim, c.controls)
		labs := 0
		for _, n := range v.Notes {
			if strings.Contains(n, "the lab's") {
				labs++
			}
		}
		if len(v.Problems) != c.problems || labs != c.labsNotes {
			t.Errorf("%s: problems %q notes %q; want %d problems, %d notes of the lab's", c.name, v.Problems, v.Notes, c.problems, c.labsNotes)
		}
	}
	if p := PlannedHandOver(); p.MaxGap != PlannedHandOverGap || p.MaxOverlap != 0 || !p.StallsAreTheLab {
		t.Errorf("PlannedHandOver %+v", p)
	}
	if k := Takeover(); k.MaxGap != TakeoverGap || k.MaxOverlap != TakeoverOverlap || k.StallsAreTheLab {
		t.Errorf("Takeover %+v", k)
	}
}
