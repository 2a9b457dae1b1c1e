package speaker

import (
	"testing"

	"github.com/herald-lb/herald/internal/bgp"
	"github.com/herald-lb/herald/internal/config"
)

func TestSessionProblem(t *testing.T) {
	cases := []struct {
		st   bgp.SessionState
		want string
	}{
		{bgp.SessionState{State: "Established"}, ""},
		{bgp.SessionState{State: "NotConfigured", Error: "cannot listen", Refused: "bad AS"}, "cannot listen"},
		{bgp.SessionState{State: "Active", Refused: "the router's AS 64513 is myASN", LastError: "i/o timeout"}, "the router's AS 64513 is myASN"},
		{bgp.SessionState{State: "Active", LastError: "i/o timeout"}, "not established: i/o timeout"},
		{bgp.SessionState{State: "Established", LastError: "old", Warnings: []string{"a", "b"}}, "a; b"},
	}
	for _, c := range cases {
		if got := sessionProblem(c.st); got != c.want {
			t.Errorf("%+v: %q, want %q", c.st, got, c.want)
		}
	}
}

func TestASNClass(t *testing.T) {
	for in, want := range map[config.DynamicASN]bgp.ASNClass{"": bgp.FixedASN, config.DynamicInternal: bgp.AnyInternal, config.DynamicExternal: bgp.AnyExternal} {
		if got := asnClass(in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}
