package members

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// newMemberlistLogger returns the *log.Logger memberlist writes to. Each
// line ("[LEVEL] memberlist: text") becomes one slog record at the matching
// level, so nothing goes to stderr.
//
// It also passes memberlist's own probe verdicts to onSuspect: memberlist
// has no callback for "my probe of X failed" (its EventDelegate reports
// join, leave and update only), and this log line is the one place that
// verdict surfaces. The wording is pinned by TestSuspectLineFromMemberlist.
func newMemberlistLogger(logger *slog.Logger, onSuspect func(node string)) *log.Logger {
	return log.New(&logWriter{logger: logger, onSuspect: onSuspect}, "", 0)
}

type logWriter struct {
	logger    *slog.Logger
	onSuspect func(node string)
}

func (w *logWriter) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(string(p))
	w.logger.Log(context.Background(), level, msg)
	if node, ok := suspectedNode(msg); ok && w.onSuspect != nil {
		w.onSuspect(node)
	}
	return len(p), nil
}

// parseMemberlistLine splits "[WARN] memberlist: text" into a slog level
// and "text". Lines without a known level tag are logged at Info.
func parseMemberlistLine(line string) (slog.Level, string) {
	line = strings.TrimSpace(line)
	level := slog.LevelInfo
	tags := []struct {
		tag   string
		level slog.Level
	}{
		{"[DEBUG]", slog.LevelDebug},
		{"[INFO]", slog.LevelInfo},
		{"[WARN]", slog.LevelWarn},
		{"[ERR]", slog.LevelError},
		{"[ERROR]", slog.LevelError},
	}
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(line, t.tag); ok {
			level, line = t.level, strings.TrimSpace(rest)
			break
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	return level, line
}

// suspectedNode recognises memberlist's "Suspect <node> has failed, no
// acks received", logged when this member's own probe (direct, indirect
// and TCP) of <node> got no answer.
func suspectedNode(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "Suspect ")
	if !ok {
		return "", false
	}
	node, ok := strings.CutSuffix(rest, " has failed, no acks received")
	if !ok || node == "" || strings.ContainsAny(node, " \t") {
		return "", false
	}
	return node, true
}
