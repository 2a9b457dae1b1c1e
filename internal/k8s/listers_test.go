package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestSlicesOf(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &discoveryv1.EndpointSlice{}, 0, cache.Indexers{})
	if err := IndexSlicesByService(inf); err != nil {
		t.Fatal(err)
	}
	slice := func(ns, name, svc string) *discoveryv1.EndpointSlice {
		es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}}}
		if svc != "" {
			es.Labels[discoveryv1.LabelServiceName] = svc
		}
		return es
	}
	for _, es := range []*discoveryv1.EndpointSlice{
		slice("a", "web-1", "web"), slice("a", "web-2", "web"), slice("b", "web-1", "web"), slice("a", "orphan", ""),
	} {
		if err := inf.GetIndexer().Add(es); err != nil {
			t.Fatal(err)
		}
	}
	got := SlicesOf(inf.GetIndexer(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}})
	names := map[string]bool{}
	for _, es := range got {
		names[es.Namespace+"/"+es.Name] = true
	}
	if len(got) != 2 || !names["a/web-1"] || !names["a/web-2"] {
		t.Errorf("slices of a/web: %v", names)
	}
	if got := SlicesOf(inf.GetIndexer(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "none"}}); len(got) != 0 {
		t.Errorf("a Service without slices got %d", len(got))
	}
}
