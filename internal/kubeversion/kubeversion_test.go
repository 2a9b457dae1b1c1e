package kubeversion

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		info apiversion.Info
		ok   bool
	}{
		{apiversion.Info{GitVersion: "v1.31.0"}, true},
		{apiversion.Info{GitVersion: "v1.37.2"}, true},
		{apiversion.Info{GitVersion: "v1.31.4-gke.1000"}, true},
		{apiversion.Info{GitVersion: "v1.32.0-rc.1"}, true},
		{apiversion.Info{GitVersion: "v2.0.0"}, true},
		{apiversion.Info{GitVersion: "v1.30.9"}, false},
		{apiversion.Info{GitVersion: "v1.29.3+k3s1"}, false},
		{apiversion.Info{GitVersion: "v1.9.11"}, false}, // 9 < 31, not "1.9" > "1.31" as strings
		{apiversion.Info{Major: "1", Minor: "31+"}, true},
		{apiversion.Info{Major: "1", Minor: "28+"}, false},
		{apiversion.Info{GitVersion: "weird", Major: "1", Minor: "33"}, true},
	} {
		err := Check(&c.info)
		if (err == nil) != c.ok {
			t.Errorf("%+v: Check = %v, want ok=%v", c.info, err, c.ok)
		}
	}
}

func TestCheckMessageSaysWhy(t *testing.T) {
	err := Check(&apiversion.Info{GitVersion: "v1.30.2", Major: "1", Minor: "30"})
	if err == nil {
		t.Fatal("1.30 accepted")
	}
	for _, want := range []string{"v1.30.2", "1.31", "CEL", "docs/operations.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestCheckUnreadableVersion(t *testing.T) {
	if err := Check(&apiversion.Info{GitVersion: "devel"}); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("Check(devel) = %v", err)
	}
}

// TestCheckServer reads /version through a real discovery client from an
// HTTP server that answers as an old API server would.
func TestCheckServer(t *testing.T) {
	for _, c := range []struct {
		git string
		ok  bool
	}{{"v1.29.0", false}, {"v1.31.1", true}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/version" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(apiversion.Info{GitVersion: c.git, Major: "1", Minor: strings.Split(c.git, ".")[1]})
		}))
		d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckServer(d)
		srv.Close()
		if (err == nil) != c.ok {
			t.Errorf("server %s: CheckServer = %v, want ok=%v", c.git, err, c.ok)
		}
	}
}

// TestWaitAndCheckServerRetriesUntilReachable: the first answers fail (as
// when a pod starts before its node routes the Service address), then the
// API server answers and its version is checked; an old version is
// refused at once, and ctx ends the wait.
func TestWaitAndCheckServerRetriesUntilReachable(t *testing.T) {
	var calls atomic.Int32
	var git atomic.Value
	git.Store("v1.31.1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		v := git.Load().(string)
		_ = json.NewEncoder(w).Encode(apiversion.Info{GitVersion: v, Major: "1", Minor: strings.Split(v, ".")[1]})
	}))
	defer srv.Close()
	d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var retried int
	if err := WaitAndCheckServer(context.Background(), d, func(error) { retried++ }); err != nil {
		t.Fatalf("WaitAndCheckServer = %v after the server came up", err)
	}
	if retried != 2 {
		t.Errorf("retried %d times, want 2", retried)
	}
	git.Store("v1.29.0")
	if err := WaitAndCheckServer(context.Background(), d, nil); err == nil || !strings.Contains(err.Error(), "older than 1.31") {
		t.Errorf("old server: %v", err)
	}
	calls.Store(-1000) // unreachable from now on
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := WaitAndCheckServer(ctx, d, nil); err == nil {
		t.Error("WaitAndCheckServer returned nil for a server that never answered")
	}
}
