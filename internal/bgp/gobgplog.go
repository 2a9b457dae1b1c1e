package bgp

import (
	"context"
	"log/slog"
)

// gobgpHandler is the slog.Handler GoBGP logs through. It forwards GoBGP's
// records to the speaker's logger one level lower (GoBGP's Info is chatty;
// Herald logs its own decisions), and it watches for the debug record
// GoBGP writes when a dial fails, which is the only place that error shows
// up: a wrong TCP MD5 password or an unreachable router leaves the session
// in Active with nothing else to say why.
//
// It also watches for the notification GoBGP sends when a router's OPEN
// has the wrong AS number (Bad Peer AS): on an outgoing connection GoBGP
// v4.8.0 refuses it before the session leaves Active, so no state event
// says so.
type gobgpHandler struct {
	inner     slog.Handler
	neighbor  string // the "Key" attribute GoBGP puts on a peer's logger
	onConnErr func(neighbor, err string)
	onBadAS   func(neighbor string)
}

func newGobgpHandler(inner slog.Handler, onConnErr func(neighbor, err string), onBadAS func(neighbor string)) *gobgpHandler {
	return &gobgpHandler{inner: inner.WithAttrs([]slog.Attr{slog.String("component", "gobgp")}), onConnErr: onConnErr, onBadAS: onBadAS}
}

// isBadPeerAS tells whether a record is GoBGP sending an OPEN Message
// Error / Bad Peer AS notification (code 2, subcode 2).
func isBadPeerAS(r slog.Record) bool {
	if r.Message != "sent notification" {
		return false
	}
	var code, sub int64
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "Code":
			code = a.Value.Int64()
		case "Subcode":
			sub = a.Value.Int64()
		}
		return true
	})
	return code == 2 && sub == 2
}

// Enabled lets debug records through, since the dial error is one.
func (h *gobgpHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelDebug
}

func (h *gobgpHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "failed to connect" && h.neighbor != "" && h.onConnErr != nil {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "Error" {
				h.onConnErr(h.neighbor, a.Value.String())
				return false
			}
			return true
		})
	}
	if h.neighbor != "" && h.onBadAS != nil && isBadPeerAS(r) {
		h.onBadAS(h.neighbor)
	}
	level := demote(r.Level)
	if !h.inner.Enabled(ctx, level) {
		return nil
	}
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return h.inner.Handle(ctx, out)
}

func (h *gobgpHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		if a.Key == "Key" {
			c.neighbor = a.Value.String()
		}
	}
	c.inner = h.inner.WithAttrs(attrs)
	return &c
}

func (h *gobgpHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}

// demote maps GoBGP's Info to Debug; warnings and errors stay.
func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}
