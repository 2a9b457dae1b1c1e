package main

import (
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

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

const goodKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes
