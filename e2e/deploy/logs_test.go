package deploy

import (
	"strings"
	"testing"
)

// TestLastLines keeps the last n lines of a deleted pod's log, ending in
// one newline whether or not the log did.
func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\n", 3, "a\nb\n"},
		{"a\nb\nc\nd\n", 2, "c\nd\n"},
		{"a\nb\nc\nd", 2, "c\nd\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
	} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	long := strings.Repeat("line\n", failureLogLines+50)
	if got := strings.Count(lastLines(long, failureLogLines), "\n"); got != failureLogLines {
		t.Errorf("kept %d lines of %d, want %d", got, failureLogLines+50, failureLogLines)
	}
}
