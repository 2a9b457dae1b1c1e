package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestWaitForKeyAppearsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, err := waitForKey(context.Background(), path, 10*time.Millisecond, 30*time.Second, quiet)
		done <- result{err}
	}()
	// Atomically, as the kubelet updates a Secret volume: os.WriteFile
	// creates the file empty first, and a poll in between read 0 bytes,
	// a malformed key (failed under -race in a busy run).
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("0123456789abcdef0123456789abcdef"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waitForKey did not return after the key appeared")
	}
}

func TestWaitForKeyMissingTimesOut(t *testing.T) {
	_, err := waitForKey(context.Background(), filepath.Join(t.TempDir(), "key"), 10*time.Millisecond, 50*time.Millisecond, quiet)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitForKeyMalformedFailsAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("short"), 0o400); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := waitForKey(context.Background(), path, 10*time.Millisecond, time.Minute, quiet)
	if err == nil {
		t.Fatal("a malformed key was accepted")
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("a malformed key waited %s", time.Since(start))
	}
}
