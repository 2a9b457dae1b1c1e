package l2owner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A scenario file (testdata/*.txt) is a script in the style of etcd raft's
// testdata: blocks separated by blank lines, each a command line, a line
// "----" and the output expected, one line each. Lines starting with #
// outside a block's output are comments. Times are offsets from the
// scenario's start (Go durations).
//
//	new pause-after=240ms [phase=owner|releasing]   a fresh machine
//	claim at=T                                       the decision: owned
//	release at=T                                     the decision: released
//	pause at=T gap=D                                 not scheduled for D, until T
//	heard at=T by=MAC [speaker=true]                 MAC answered or announced
//	asked at=T by=MAC [speaker=true]                 MAC asked who answers
//	gone at=T                                        the host deferred to is gone
//	tick at=T                                        a Wake has come
//
// The output of an event is its actions, one a line ("wake at=T",
// "defer to=MAC", "announce"...), or "(none)", then "-> phase" (and
// " by=MAC" when deferred or yielded). The output of new is "-> phase".

// step is one block of a scenario.
type step struct {
	line int
	cmd  string
	args map[string]string
	want []string
}

// parseScenario parses a scenario file.
func parseScenario(text string) ([]step, error) {
	var steps []step
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		s, err := parseCommand(i+1, l)
		if err != nil {
			return nil, err
		}
		i++
		if i >= len(lines) || strings.TrimSpace(lines[i]) != "----" {
			return nil, fmt.Errorf("line %d: want ---- after the command", i+1)
		}
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
			s.want = append(s.want, strings.TrimSpace(lines[i]))
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// parseCommand parses "cmd key=value...".
func parseCommand(line int, l string) (step, error) {
	f := strings.Fields(l)
	s := step{line: line, cmd: f[0], args: map[string]string{}}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return s, fmt.Errorf("line %d: argument %q: want key=value", line, kv)
		}
		if _, dup := s.args[k]; dup {
			return s, fmt.Errorf("line %d: argument %q given twice", line, k)
		}
		s.args[k] = v
	}
	return s, nil
}

// format writes steps back as a scenario file.
func format(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(s.cmd)
		for _, k := range slices.Sorted(mapKeys(s.args)) {
			fmt.Fprintf(&b, " %s=%s", k, s.args[k])
		}
		b.WriteString("\n----\n")
		for _, w := range s.want {
			b.WriteString(w + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// epoch is the start of every scenario.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// run plays s on m and returns its output.
func (s step) run(m *Machine) ([]string, error) {
	if s.cmd == "new" {
		cfg := Config{}
		if v, ok := s.args["pause-after"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, err
			}
			cfg.PauseAfter = d
		}
		*m = New(cfg)
		switch s.args["phase"] {
		case "", "idle":
		case "owner":
			*m = NewIn(cfg, Owner)
		case "releasing":
			*m = NewIn(cfg, Releasing)
		default:
			return nil, fmt.Errorf("unknown phase %q", s.args["phase"])
		}
		return []string{phaseLine(m)}, nil
	}
	ev, err := s.event()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range m.Step(ev) {
		out = append(out, actionLine(a))
	}
	if len(out) == 0 {
		out = append(out, "(none)")
	}
	return append(out, phaseLine(m)), nil
}

// event builds the Event of a step.
func (s step) event() (Event, error) {
	kinds := map[string]Kind{"claim": Claim, "release": Release, "pause": Pause, "heard": Heard, "asked": Asked, "gone": Gone, "tick": Tick}
	k, ok := kinds[s.cmd]
	if !ok {
		return Event{}, fmt.Errorf("unknown command %q", s.cmd)
	}
	ev := Event{Kind: k, By: s.args["by"]}
	at, err := time.ParseDuration(s.args["at"])
	if err != nil {
		return ev, fmt.Errorf("at: %w", err)
	}
	ev.At = epoch.Add(at)
	if v, ok := s.args["gap"]; ok {
		if ev.Gap, err = time.ParseDuration(v); err != nil {
			return ev, fmt.Errorf("gap: %w", err)
		}
	}
	if v, ok := s.args["speaker"]; ok {
		if ev.Speaker, err = strconv.ParseBool(v); err != nil {
			return ev, fmt.Errorf("speaker: %w", err)
		}
	}
	return ev, nil
}

func actionLine(a Action) string {
	l := a.Do.String()
	if !a.At.IsZero() {
		l += " at=" + a.At.Sub(epoch).String()
	}
	if a.To != "" {
		l += " to=" + a.To
	}
	return l
}

func phaseLine(m *Machine) string {
	l := "-> " + m.Phase().String()
	if m.By() != "" {
		l += " by=" + m.By()
	}
	return l
}

// TestScenarios plays every scenario file under testdata.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario under testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := parseScenario(string(data))
			if err != nil {
				t.Fatal(err)
			}
			var m Machine
			for _, s := range steps {
				got, err := s.run(&m)
				if err != nil {
					t.Fatalf("%s:%d: %v", f, s.line, err)
				}
				if !slices.Equal(got, s.want) {
					t.Errorf("%s:%d: %s %v:\ngot\n  %s\nwant\n  %s", f, s.line, s.cmd, s.args,
						strings.Join(got, "\n  "), strings.Join(s.want, "\n  "))
				}
			}
		})
	}
}

// TestParseScenario checks the parser on a small script and its errors.
func TestParseScenario(t *testing.T) {
	steps, err := parseScenario("# c\nnew pause-after=1s\n----\n-> idle\n\nclaim at=0s\n----\nanswer-on\nannounce\n-> owner\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[1].cmd != "claim" || steps[1].args["at"] != "0s" || len(steps[1].want) != 3 {
		t.Fatalf("parsed %+v", steps)
	}
	for _, bad := range []string{"claim at=0s\n", "claim at\n----\n", "claim at=1 at=2\n----\n"} {
		if _, err := parseScenario(bad); err == nil {
			t.Errorf("%q: parsed without an error", bad)
		}
	}
}

// FuzzParseScenario: the parser never panics, and what it parses formats
// back to a script that parses the same.
func FuzzParseScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("pause at=1s gap=2s\n----\n(none)\n")
	f.Fuzz(func(t *testing.T, text string) {
		steps, err := parseScenario(text)
		if err != nil {
			return
		}
		again, err := parseScenario(format(steps))
		if err != nil {
			t.Fatalf("formatted script does not parse: %v\n%s", err, format(steps))
		}
		if format(again) != format(steps) {
			t.Fatalf("round trip changed the script:\n%s\n---\n%s", format(steps), format(again))
		}
		var m Machine
		for _, s := range steps {
			_, _ = s.run(&m) // never panics, whatever the events
		}
	})
}
