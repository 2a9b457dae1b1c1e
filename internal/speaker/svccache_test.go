package speaker

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/herald-lb/herald/internal/announce"
)

// fakeCluster holds Services and EndpointSlices for serviceCache tests.
type fakeCluster struct {
	svcs   map[string]*corev1.Service
	slices map[string]*discoveryv1.EndpointSlice // by slice name
}

func (f *fakeCluster) source() serviceSource {
	return serviceSource{
		list: func() ([]*corev1.Service, error) {
			var out []*corev1.Service
			for _, s := range f.svcs {
				out = append(out, s)
			}
			return out, nil
		},
		get: func(ns, name string) (*corev1.Service, error) {
			if s, ok := f.svcs[ns+"/"+name]; ok {
				return s, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
		},
		ours: func(s *corev1.Service) bool { return s.Spec.LoadBalancerClass == nil },
		slicesOf: func(s *corev1.Service) []*discoveryv1.EndpointSlice {
			var out []*discoveryv1.EndpointSlice
			for _, es := range f.slices {
				if es.Namespace == s.Namespace && es.Labels[discoveryv1.LabelServiceName] == s.Name {
					out = append(out, es)
				}
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
			return out
		},
	}
}

// TestServiceCacheMatchesFullConversion: after any sequence of Service and
// EndpointSlice changes, each touched as the informers' handlers do, the
// cache gives exactly what converting every Service gives.
func TestServiceCacheMatchesFullConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]announce.Service{}
	f := &fakeCluster{svcs: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	c := newServiceCache()
	for step := range 3000 {
		name := fmt.Sprintf("svc-%02d", rng.IntN(40))
		switch op := rng.IntN(6); op {
		case 0, 1: // create or update a Service
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"step": fmt.Sprint(step)}},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			if rng.IntN(5) == 0 {
				svc.Spec.LoadBalancerClass = ptr.To("other") // not ours
			}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("198.51.100.%d", rng.IntN(30)+64)}}
			if old := f.svcs["ns/"+name]; old != nil {
				c.touchObject(old)
			}
			f.svcs["ns/"+name] = svc
			c.touchObject(svc)
		case 2: // delete a Service
			if old := f.svcs["ns/"+name]; old != nil {
				delete(f.svcs, "ns/"+name)
				c.touchObject(old)
			}
		case 3, 4: // an EndpointSlice appears or changes
			es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-" + fmt.Sprint(rng.IntN(2)),
				Labels: map[string]string{discoveryv1.LabelServiceName: name}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To(fmt.Sprintf("node%d", rng.IntN(3))),
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(rng.IntN(2) == 0)}}}}
			if old := f.slices[es.Name]; old != nil {
				c.touchObject(old)
			}
			f.slices[es.Name] = es
			c.touchObject(es)
		case 5: // an EndpointSlice goes
			for k, es := range f.slices {
				if es.Labels[discoveryv1.LabelServiceName] == name {
					delete(f.slices, k)
					c.touchObject(es)
					break
				}
			}
		}
		if rng.IntN(4) != 0 {
			continue // reconciles batch several changes
		}
		got, err := c.services(f.source())
		if err != nil {
			t.Fatal(err)
		}
		all, _ := f.source().list()
		want := announce.ServicesFrom(all, f.source().ours, f.source().slicesOf)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		for _, g := range got {
			// A Service whose conversion kept its Rev must not have
			// changed: L2Memo trusts it.
			if p, ok := seen[g.Key]; ok && p.Rev == g.Rev && !reflect.DeepEqual(p, g) {
				t.Fatalf("step %d: %s changed but kept Rev %d:\n was %+v\n now %+v", step, g.Key, g.Rev, p, g)
			}
			seen[g.Key] = g
		}
		if !reflect.DeepEqual(withoutRevs(got), want) {
			t.Fatalf("step %d: cache differs from a full conversion:\n got %+v\nwant %+v", step, got, want)
		}
	}
}

// withoutRevs returns svcs with Rev 0, as a conversion outside the cache.
func withoutRevs(svcs []announce.Service) []announce.Service {
	out := slices.Clone(svcs)
	for i := range out {
		out[i].Rev = 0
	}
	return out
}

// TestServiceCacheKeepsRevWhenNothingAnnouncingReadsChanged: a pod
// replaced on the same node (a new EndpointSlice address) or a Service
// annotation announcing ignores keeps the Service's Rev, so no address is
// decided again; a readiness change or a new address gives a new Rev.
func TestServiceCacheKeepsRevWhenNothingAnnouncingReadsChanged(t *testing.T) {
	f := &fakeCluster{svcs: map[string]*corev1.Service{}, slices: map[string]*discoveryv1.EndpointSlice{}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.64"}}}}}
	slice := func(addr string, ready bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}, NodeName: ptr.To("node1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}}}
	}
	f.svcs["ns/web"], f.slices["web-1"] = svc, slice("10.0.0.1", true)
	c := newServiceCache()
	rev := func(what string) uint64 {
		t.Helper()
		got, err := c.services(f.source())
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %v", what, got, err)
		}
		return got[0].Rev
	}
	first := rev("first conversion")
	steps := []struct {
		what    string
		change  func()
		changed bool
	}{
		{"pod replaced on the same node", func() { f.slices["web-1"] = slice("10.0.0.2", true) }, false},
		{"annotation announcing does not read", func() {
			s := svc.DeepCopy()
			s.Annotations = map[string]string{"example.com/owner": "team-a"}
			f.svcs["ns/web"] = s
		}, false},
		{"endpoint no longer ready", func() { f.slices["web-1"] = slice("10.0.0.2", false) }, true},
		{"another address", func() {
			s := f.svcs["ns/web"].DeepCopy()
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: "2001:db8::64"})
			f.svcs["ns/web"] = s
		}, true},
	}
	for _, st := range steps {
		st.change()
		c.touch("ns/web")
		got := rev(st.what)
		if (got != first) != st.changed {
			t.Errorf("%s: Rev %d after %d; want a new Rev: %v", st.what, got, first, st.changed)
		}
		first = got
	}
}
