package daemon

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Health is what /healthz and /readyz answer.
//
//   - A failure (Fail) is a component that stopped working and will not
//     work again in this process (the L2 announcer's sockets, the BGP
//     server): /healthz answers 500 naming it, so that the kubelet's
//     liveness probe restarts the container, and /readyz too.
//   - A wait (Wait) is a start condition that resolves by itself (the
//     member-list key not there yet, the Node without an InternalIP yet):
//     /readyz answers 503 naming it, /healthz stays ok, and the process
//     becomes ready without a restart once it resolves (Done).
//   - SetReady is the process's own readiness (caches synced, decisions
//     applied); /readyz needs it too.
type Health struct {
	ready atomic.Bool

	mu       sync.Mutex
	failures map[string]string // component -> reason
	waits    map[string]string // condition -> reason
}

// SetReady sets the process's own readiness.
func (h *Health) SetReady(ready bool) { h.ready.Store(ready) }

// Fail records that component stopped working, and why. It stays failed:
// the process is to be restarted.
func (h *Health) Fail(component, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == nil {
		h.failures = map[string]string{}
	}
	h.failures[component] = reason
}

// Wait records that the process waits for condition to resolve, and why
// (a later Wait of the same condition replaces the reason).
func (h *Health) Wait(condition, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waits == nil {
		h.waits = map[string]string{}
	}
	h.waits[condition] = reason
}

// Done records that condition resolved.
func (h *Health) Done(condition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waits, condition)
}

// Failures lists the failed components as "component: reason", sorted.
func (h *Health) Failures() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return lines(h.failures)
}

// Waits lists the conditions waited for as "condition: reason", sorted.
func (h *Health) Waits() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return lines(h.waits)
}

func lines(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+": "+m[k])
	}
	return out
}

// healthz answers ok unless a component failed.
func (h *Health) healthz(w http.ResponseWriter, _ *http.Request) {
	if f := h.Failures(); len(f) > 0 {
		http.Error(w, "failed: "+strings.Join(f, "; "), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// readyz answers ok when ready, nothing failed and nothing is waited for.
func (h *Health) readyz(w http.ResponseWriter, _ *http.Request) {
	var why []string
	for _, f := range h.Failures() {
		why = append(why, "failed: "+f)
	}
	for _, c := range h.Waits() {
		why = append(why, "waiting: "+c)
	}
	if len(why) == 0 && !h.ready.Load() {
		why = append(why, "not ready")
	}
	if len(why) > 0 {
		http.Error(w, strings.Join(why, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
