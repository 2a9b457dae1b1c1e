package l2owner

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
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
//	new [pause-after=D] [phase=owner|releasing] [addr=IP] [mac=MAC]
//	    [refresh=D] [settle=D] [verify=D]         a fresh machine
//	rank by=MAC                                   who wins the fence
//	claim at=T                                    the decision: owned
//	release at=T                                  the decision: released
//	drop at=T                                     no longer announced here
//	pause at=T gap=D                              not scheduled for D, until T
//	announced at=T by=MAC [speaker=true]          MAC announced the address
//	heard at=T [by=MAC] [speaker=true]            MAC answered our question
//	asked at=T by=MAC [speaker=true]              MAC asked who answers
//	notified at=T by=MAC [speaker=true]           MAC announced it to us alone
//	gave-up at=T by=MAC [speaker=true]            MAC probed it to us alone
//	healed at=T                                   the member list healed
//	tick at=T [speaker=true]                      a Wake has come
//
// The machine's address is 198.51.100.10 and its MAC 02:00:00:00:00:0a
// unless new says otherwise; the fence's timing is the default's. A
// scenario may play several machines (the same address on two nodes, or
// on two interfaces of one node): every command takes m=NAME to say
// which (default: the one without a name).
// The output of an event is its actions, one a line ("wake at=T",
// "defer to=MAC at=T", "announce", "conflict to=MAC why=won"...), or
// "(none)", then "-> phase" (and " by=MAC" when deferred, fenced or
// yielded). The output of new is "-> phase", of rank "this node wins" or
// "MAC wins". Run the test with -rewrite to write the outputs the machine
// gives into the files (then read the diff).

var rewrite = flag.Bool("rewrite", false, "write the outputs the machine gives into the scenario files")

// The machine of a scenario unless new says otherwise.
var (
	scenarioAddr = netip.MustParseAddr("198.51.100.10")
	scenarioMAC  = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
)

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

// run plays s on its machine among ms and returns its output.
func (s step) run(ms map[string]*Machine) ([]string, error) {
	m := ms[s.args["m"]]
	if m == nil {
		m = &Machine{}
		ms[s.args["m"]] = m
	}
	switch s.cmd {
	case "new":
		return s.newMachine(m)
	case "rank":
		by, err := net.ParseMAC(s.args["by"])
		if err != nil {
			return nil, fmt.Errorf("by: %w", err)
		}
		if Wins(m.cfg.Addr, m.cfg.MAC, by) {
			return []string{"this node wins"}, nil
		}
		return []string{by.String() + " wins"}, nil
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

// newMachine plays a new step.
func (s step) newMachine(m *Machine) ([]string, error) {
	cfg := Config{Addr: scenarioAddr, MAC: scenarioMAC}
	for k, d := range map[string]*time.Duration{"pause-after": &cfg.PauseAfter, "refresh": &cfg.Refresh, "settle": &cfg.FenceSettle, "verify": &cfg.FenceVerify} {
		if v, ok := s.args[k]; ok {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	if v, ok := s.args["addr"]; ok {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, err
		}
		cfg.Addr = a
	}
	if v, ok := s.args["mac"]; ok {
		hw, err := net.ParseMAC(v)
		if err != nil {
			return nil, err
		}
		cfg.MAC = hw
	}
	switch s.args["phase"] {
	case "", "idle":
		*m = New(cfg)
	case "owner":
		*m = NewIn(cfg, Owner)
	case "releasing":
		*m = NewIn(cfg, Releasing)
	default:
		return nil, fmt.Errorf("unknown phase %q", s.args["phase"])
	}
	return []string{phaseLine(m)}, nil
}

// event builds the Event of a step.
func (s step) event() (Event, error) {
	kinds := map[string]Kind{}
	for k := Claim; k <= Tick; k++ {
		kinds[k.String()] = k
	}
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
	if a.Why != "" {
		l += " why=" + a.Why
	}
	if a.Report {
		l += " report"
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
			ms := map[string]*Machine{}
			outs := map[int][]string{}
			for _, s := range steps {
				got, err := s.run(ms)
				if err != nil {
					t.Fatalf("%s:%d: %v", f, s.line, err)
				}
				outs[s.line] = got
				if !slices.Equal(got, s.want) && !*rewrite {
					t.Errorf("%s:%d: %s %v:\ngot\n  %s\nwant\n  %s", f, s.line, s.cmd, s.args,
						strings.Join(got, "\n  "), strings.Join(s.want, "\n  "))
				}
			}
			if *rewrite {
				if err := os.WriteFile(f, []byte(rewritten(string(data), outs)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// rewritten is text with the output of the command at each line of outs
// replaced by that output; comments and commands stay.
func rewritten(text string, outs map[int][]string) string {
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i] + "\n")
		got, ok := outs[i+1]
		if !ok || i+1 >= len(lines) {
			continue
		}
		i++
		b.WriteString(lines[i] + "\n") // ----
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
		}
		for _, g := range got {
			b.WriteString(g + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
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
		ms := map[string]*Machine{}
		for _, s := range steps {
			_, _ = s.run(ms) // never panics, whatever the events
		}
	})
}
