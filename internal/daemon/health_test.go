package daemon

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.HandlerFunc) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// TestHealthzTurnsRed: /healthz answers ok until a component fails, then
// 500 naming every failed component and its reason; /readyz too.
func TestHealthzTurnsRed(t *testing.T) {
	h := &Health{}
	h.SetReady(true)
	if code, body := get(t, h.healthz); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz = %d %q, want 200 ok", code, body)
	}
	h.Fail("layer2", "interface eth0 arp: sending: no buffer space available")
	h.Fail("bgp", "server stopped")
	code, body := get(t, h.healthz)
	if code != http.StatusInternalServerError || body != "failed: bgp: server stopped; layer2: interface eth0 arp: sending: no buffer space available" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, h.readyz); code != http.StatusServiceUnavailable || !strings.Contains(body, "failed: layer2: interface eth0") {
		t.Fatalf("/readyz = %d %q, want 503 naming the failure", code, body)
	}
}

// TestReadyzWaitsThenReady: a wait makes /readyz answer 503 with its
// reason while /healthz stays ok (no restart); once it is done and the
// process is ready, /readyz answers ok.
func TestReadyzWaitsThenReady(t *testing.T) {
	h := &Health{}
	if code, body := get(t, h.readyz); code != http.StatusServiceUnavailable || body != "not ready" {
		t.Fatalf("/readyz = %d %q, want 503 not ready", code, body)
	}
	h.Wait("member list", "Secret herald-system/herald-memberlist not found")
	h.SetReady(true)
	if code, body := get(t, h.readyz); code != http.StatusServiceUnavailable || body != "waiting: member list: Secret herald-system/herald-memberlist not found" {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	if code, _ := get(t, h.healthz); code != http.StatusOK {
		t.Fatalf("/healthz = %d while waiting, want 200", code)
	}
	h.Done("member list")
	if code, body := get(t, h.readyz); code != http.StatusOK || body != "ok" {
		t.Fatalf("/readyz = %d %q once done, want 200 ok", code, body)
	}
}
