package apifloor_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/apifloor"
	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestMeasureWritesEveryStatusAndCleansUp: with Keep every Service has its
// ingress address with ipMode VIP, patched, applied or updated; without it none is
// left.
func TestMeasureWritesEveryStatusAndCleansUp(t *testing.T) {
	cfg := testenv.Shared(t).AdminConfig
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for _, o := range []apifloor.Options{{IPv6: false}, {IPv6: true}, {Apply: true}, {Update: true}} {
		o.Namespace, o.Services, o.Writers, o.Keep = "floor-test", 20, 4, true
		r, err := apifloor.Measure(ctx, cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		kind := "patches"
		switch {
		case o.Apply:
			kind = "applies"
		case o.Update:
			kind = "updates"
		}
		if r.Services != 20 || r.Writers != 4 || r.Write <= 0 || r.Kind != kind {
			t.Errorf("result %+v", r)
		}
		svcs, err := kube.CoreV1().Services(o.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs.Items) != 20 {
			t.Fatalf("%d Services, want 20", len(svcs.Items))
		}
		for _, s := range svcs.Items {
			in := s.Status.LoadBalancer.Ingress
			if len(in) != 1 || in[0].IPMode == nil || *in[0].IPMode != corev1.LoadBalancerIPModeVIP {
				t.Errorf("Service %s ingress %+v, want one address with ipMode VIP", s.Name, in)
			}
		}
		o.Keep = false
		if _, err := apifloor.Measure(ctx, cfg, o); err != nil {
			t.Fatal(err)
		}
		svcs, err = kube.CoreV1().Services(o.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs.Items) != 0 {
			t.Errorf("%d Services left behind", len(svcs.Items))
		}
	}
	if _, err := apifloor.Measure(ctx, cfg, apifloor.Options{Namespace: "floor-test"}); err == nil {
		t.Error("no error for zero Services and Writers")
	}
}
