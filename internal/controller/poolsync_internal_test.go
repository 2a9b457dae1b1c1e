package controller

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	heraldlisters "github.com/herald-lb/herald/api/generated/listers/api/v1beta1"
	"github.com/herald-lb/herald/api/v1beta1"
)

// TestPoolStatusObservesTheBuiltGeneration: a pool's status names as
// observed the generation the allocator's configuration was built from,
// not the newer one already in the cache, and says nothing before the
// configuration has seen the pool (a client waiting for observedGeneration
// would otherwise act on priorities the allocator does not use yet).
func TestPoolStatusObservesTheBuiltGeneration(t *testing.T) {
	pool := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{
		Name: "main", Generation: 2, ResourceVersion: "7", Finalizers: []string{v1beta1.PoolProtectionFinalizer},
	}}
	herald := heraldfake.NewSimpleClientset(pool)
	c, err := New(kubefake.NewSimpleClientset(), herald, Options{})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(pool); err != nil {
		t.Fatal(err)
	}
	c.listers.Pools = heraldlisters.NewIPAddressPoolLister(indexer)

	if err := c.syncPool(context.Background(), "main"); err != nil {
		t.Fatal(err)
	}
	if got := statusWrites(t, herald.Actions()); len(got) != 0 {
		t.Fatalf("before the configuration saw the pool: status written %v, want nothing", got)
	}

	c.mu.Lock()
	c.poolGens = map[string]int64{"main": 1} // built from generation 1
	c.mu.Unlock()
	if err := c.syncPool(context.Background(), "main"); err != nil {
		t.Fatal(err)
	}
	got := statusWrites(t, herald.Actions())
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("configuration built from generation 1, cache at 2: observedGeneration written %v, want [1]", got)
	}
}

// statusWrites returns the observedGeneration of each pool status apply.
func statusWrites(t *testing.T, actions []clienttesting.Action) []int64 {
	t.Helper()
	var out []int64
	for _, a := range actions {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || a.GetSubresource() != "status" {
			continue
		}
		var body struct {
			Status struct {
				ObservedGeneration int64 `json:"observedGeneration"`
			} `json:"status"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatalf("status patch %s: %v", p.GetPatch(), err)
		}
		out = append(out, body.Status.ObservedGeneration)
	}
	return out
}

// TestFinalizerRemovalOfAGonePool: a deleted pool the cache still shows,
// whose finalizer is already gone from the API server with the pool (the
// answer to an earlier removal lost, or another writer), is released, not
// retried: the apply that would re-create it is refused, and the pool's
// absence is what the removal wanted.
func TestFinalizerRemovalOfAGonePool(t *testing.T) {
	now := metav1.Now()
	cached := &v1beta1.IPAddressPool{ObjectMeta: metav1.ObjectMeta{
		Name: "gone", Generation: 1, ResourceVersion: "9", DeletionTimestamp: &now,
		Finalizers: []string{v1beta1.PoolProtectionFinalizer},
	}}
	herald := heraldfake.NewSimpleClientset() // the API server has no such pool
	herald.PrependReactor("patch", "ipaddresspools", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(v1beta1.SchemeGroupVersion.WithKind("IPAddressPool").GroupKind(), "gone",
			field.ErrorList{field.Required(field.NewPath("spec"), "")})
	})
	c, err := New(kubefake.NewSimpleClientset(), herald, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.syncFinalizer(context.Background(), cached, 0); err != nil {
		t.Errorf("removing the finalizer of a pool the API server no longer has: %v, want done", err)
	}

	// a pool that still exists keeps the error, to be retried
	herald = heraldfake.NewSimpleClientset(cached.DeepCopy())
	herald.PrependReactor("patch", "ipaddresspools", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(v1beta1.SchemeGroupVersion.WithResource("ipaddresspools").GroupResource(), "gone", nil)
	})
	c, err = New(kubefake.NewSimpleClientset(), herald, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.syncFinalizer(context.Background(), cached, 0); err == nil {
		t.Error("a refused removal of a pool that still exists: no error, want one to retry")
	}
}
