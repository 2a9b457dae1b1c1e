package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	heraldfake "github.com/herald-lb/herald/api/generated/clientset/versioned/fake"
	"github.com/herald-lb/herald/internal/service"
)

// TestMetalLBNoticesFollowTheServices: the memory of which MetalLB
// annotations each Service was told about does not grow with churn: a
// Service deleted, turned to another class, or renamed to Herald's
// annotations is forgotten.
func TestMetalLBNoticesFollowTheServices(t *testing.T) {
	rec := record.NewFakeRecorder(10_000)
	c, err := New(kubefake.NewSimpleClientset(), heraldfake.NewSimpleClientset(), Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c.services = corelisters.NewServiceLister(indexer)
	ctx := context.Background()
	other := "example.com/other"
	for i := range 300 {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%d", i),
				Annotations: map[string]string{service.MetalLBAddressPool: "old"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		}
		c.noticeMetalLBAnnotations(svc)
		if c.notices.len() != 1 {
			t.Fatalf("round %d: %d notices while one Service reads MetalLB's names", i, c.notices.len())
		}
		key := cache.MetaObjectToName(svc)
		switch i % 3 {
		case 0: // deleted
			if err := c.syncService(ctx, key); err != nil {
				t.Fatal(err)
			}
		case 1: // another load-balancer class
			svc.Spec.LoadBalancerClass = &other
			if err := indexer.Add(svc); err != nil {
				t.Fatal(err)
			}
			if err := c.syncService(ctx, key); err != nil {
				t.Fatal(err)
			}
			if err := indexer.Delete(svc); err != nil {
				t.Fatal(err)
			}
		case 2: // renamed to Herald's annotation
			svc.Annotations = map[string]string{"herald.dev/address-pool": "old"}
			c.noticeMetalLBAnnotations(svc)
		}
		if n := c.notices.len(); n != 0 {
			t.Fatalf("round %d (case %d): %d notices kept for gone Services", i, i%3, n)
		}
	}
	if len(rec.Events) != 300 {
		t.Errorf("%d MetalLBAnnotation events, want one per Service", len(rec.Events))
	}
}
