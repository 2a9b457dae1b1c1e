package members

import (
	"log/slog"
	"testing"
)

func TestParseMemberlistLine(t *testing.T) {
	cases := []struct {
		line      string
		wantLevel slog.Level
		wantMsg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:5000\n", slog.LevelDebug, "Stream connection from=127.0.0.1:5000"},
		{"[INFO] memberlist: Marking n3 as failed\n", slog.LevelInfo, "Marking n3 as failed"},
		{"[WARN] memberlist: Refuting a suspect message (from: n2)\n", slog.LevelWarn, "Refuting a suspect message (from: n2)"},
		{"[ERR] memberlist: Failed fallback TCP ping: timeout\n", slog.LevelError, "Failed fallback TCP ping: timeout"},
		{"[ERROR] memberlist: something\n", slog.LevelError, "something"},
		{"no tag at all\n", slog.LevelInfo, "no tag at all"},
	}
	for _, tc := range cases {
		level, msg := parseMemberlistLine(tc.line)
		if level != tc.wantLevel || msg != tc.wantMsg {
			t.Errorf("%q: got %v %q, want %v %q", tc.line, level, msg, tc.wantLevel, tc.wantMsg)
		}
	}
}

func TestSuspectedNode(t *testing.T) {
	cases := map[string]string{
		"Suspect node-b has failed, no acks received":               "node-b",
		"Suspect worker-1.example.com has failed, no acks received": "worker-1.example.com",
		"Suspect  has failed, no acks received":                     "",
		"Suspect a b has failed, no acks received":                  "",
		"Marking node-b as failed, suspect timeout reached":         "",
		"Failed UDP ping: node-b (timeout reached)":                 "",
	}
	for msg, want := range cases {
		got, ok := suspectedNode(msg)
		if got != want || ok != (want != "") {
			t.Errorf("%q: got %q %v, want %q", msg, got, ok, want)
		}
	}
}

func TestMemberlistLoggerRoutesToSlog(t *testing.T) {
	h := &recordingHandler{records: &records{}}
	var suspected []string
	l := newMemberlistLogger(slog.New(h), func(n string) { suspected = append(suspected, n) })
	l.Printf("[INFO] memberlist: Suspect %s has failed, no acks received", "node-c")
	l.Printf("[ERR] memberlist: Failed to send ping: %s", "boom")
	if len(h.matching("INFO Suspect node-c has failed")) != 1 || len(h.matching("ERROR Failed to send ping: boom")) != 1 {
		t.Errorf("log lines not routed:\n%s", h.text())
	}
	if len(suspected) != 1 || suspected[0] != "node-c" {
		t.Errorf("suspected %v, want [node-c]", suspected)
	}
}
