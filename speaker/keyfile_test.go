package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestWaitForKeyAppearsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	type result struct {
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, err := waitForKey(context.Background(), keySource{File: path}, 10*time.Millisecond, 30*time.Second, quiet)
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
	_, err := waitForKey(context.Background(), keySource{File: filepath.Join(t.TempDir(), "key")}, 10*time.Millisecond, 50*time.Millisecond, quiet)
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
	_, err := waitForKey(context.Background(), keySource{File: path}, 10*time.Millisecond, time.Minute, quiet)
	if err == nil {
		t.Fatal("a malformed key was accepted")
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("a malformed key waited %s", time.Since(start))
	}
}

// secretCache is a Secrets lister of namespace "herald-system" over an
// indexer the test fills, as the speaker's informer fills its own.
func secretCache(t *testing.T) (cache.Indexer, corelisters.SecretNamespaceLister) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return idx, corelisters.NewSecretLister(idx).Secrets("herald-system")
}

func memberlistSecret(data string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "herald-system", Name: "herald-memberlist"}, Data: map[string][]byte{}}
	if data != "" {
		s.Data["key"] = []byte(data)
	}
	return s
}

// TestWaitForKeyFromSecretBeforeTheVolume: the volume is still empty (the
// kubelet fills an optional Secret volume at its next sync of the pod), so
// the speaker takes the key from the Secret as soon as its cache has it,
// not at the kubelet's next sync; an empty key (the controller repairs
// it) is waited out.
func TestWaitForKeyFromSecretBeforeTheVolume(t *testing.T) {
	idx, secrets := secretCache(t)
	src := keySource{File: filepath.Join(t.TempDir(), "key"), Secret: "herald-memberlist", Namespace: "herald-system", Secrets: secrets}
	if _, _, err := src.read(); err == nil || !strings.Contains(err.Error(), "herald-system/herald-memberlist not found") {
		t.Fatalf("no Secret: err = %v, want it to name the Secret", err)
	}
	if err := idx.Add(memberlistSecret("")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.read(); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Fatalf("empty Secret: err = %v", err)
	}
	done := make(chan error, 1)
	var got []byte
	go func() {
		keys, err := waitForKey(context.Background(), src, 10*time.Millisecond, 30*time.Second, quiet)
		got = keys.Primary
		done <- err
	}()
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes
	if err := idx.Update(memberlistSecret(key)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waitForKey did not return after the Secret got its key")
	}
	if !bytes.Equal(got, []byte("0123456789abcdef0123456789abcdef")) {
		t.Errorf("key %q, want the Secret's", got)
	}
}

// TestWaitForKeyFileWinsOverSecret: once mounted, the file is the key (a
// pod started after a rotation mounts the Secret's new content), and a
// malformed key in the Secret fails at once, naming it.
func TestWaitForKeyFileWinsOverSecret(t *testing.T) {
	idx, secrets := secretCache(t)
	path := filepath.Join(t.TempDir(), "key")
	src := keySource{File: path, Secret: "herald-memberlist", Namespace: "herald-system", Secrets: secrets}
	if err := idx.Add(memberlistSecret("short")); err != nil {
		t.Fatal(err)
	}
	_, err := waitForKey(context.Background(), src, 10*time.Millisecond, time.Minute, quiet)
	if err == nil || !strings.Contains(err.Error(), `Secret herald-system/herald-memberlist, key "key"`) || strings.Contains(err.Error(), "waited") {
		t.Fatalf("malformed Secret: err = %v, want it named and no wait", err)
	}
	if err := os.WriteFile(path, []byte("fedcba9876543210"), 0o400); err != nil {
		t.Fatal(err)
	}
	keys, from, err := src.read()
	if err != nil || from != "file" || string(keys.Primary) != "fedcba9876543210" {
		t.Fatalf("read = %q from %q, %v; want the file's key", keys.Primary, from, err)
	}
}

// TestWaitForKeyWithoutSecretName: --memberlist-secret="" reads the file
// only, as before.
func TestWaitForKeyWithoutSecretName(t *testing.T) {
	idx, secrets := secretCache(t)
	if err := idx.Add(memberlistSecret("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")); err != nil {
		t.Fatal(err)
	}
	src := keySource{File: filepath.Join(t.TempDir(), "key"), Namespace: "herald-system", Secrets: secrets}
	_, err := waitForKey(context.Background(), src, 10*time.Millisecond, 50*time.Millisecond, quiet)
	if err == nil || !strings.Contains(err.Error(), "waited") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want a wait for the file", err)
	}
}
