// Package memberkey holds the member list's key as tests see it: a
// Secrets lister the test fills, as the speaker's informer fills its own,
// the Secret the controller writes, and a well-formed key. The speaker
// command's tests and internal/members' share them; it imports neither.
package memberkey

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Namespace and SecretName are where the Secret is.
const (
	Namespace  = "herald-system"
	SecretName = "herald-memberlist"
)

// Good is a well-formed key: the base64 of 32 bytes.
const Good = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// SecretCache is a Secrets lister of Namespace over an indexer the test
// fills.
func SecretCache(t testing.TB) (cache.Indexer, corelisters.SecretNamespaceLister) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return idx, corelisters.NewSecretLister(idx).Secrets(Namespace)
}

// Secret is the member-list Secret holding data under "key" ("": no
// key).
func Secret(data string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: SecretName}, Data: map[string][]byte{}}
	if data != "" {
		s.Data["key"] = []byte(data)
	}
	return s
}
