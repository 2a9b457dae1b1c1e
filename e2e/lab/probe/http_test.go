package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestHTTPMonitor: every try is emitted in order, answered ones OK, and
// the ones the server refused with their error.
func TestHTTPMonitor(t *testing.T) {
	var refuse atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if refuse.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tries []HTTPTry
	done := make(chan error, 1)
	go func() {
		done <- HTTPMonitor(ctx, srv.URL, 5*time.Millisecond, time.Second, func(t HTTPTry) {
			tries = append(tries, t)
			switch {
			case len(tries) == 5:
				refuse.Store(true)
			case len(tries) == 10:
				refuse.Store(false)
			case len(tries) == 15:
				cancel()
			}
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("monitor did not stop")
	}
	if len(tries) != 15 {
		t.Fatalf("%d tries, want 15", len(tries))
	}
	for i, try := range tries {
		wantOK := i < 5 || i >= 10
		if try.OK != wantOK || (try.Error == "") != wantOK {
			t.Errorf("try %d: ok %v error %q, want ok %v", i, try.OK, try.Error, wantOK)
		}
		if i > 0 && try.Sent.Before(tries[i-1].Sent) {
			t.Errorf("try %d sent before try %d", i, i-1)
		}
	}
}
