package lean

import (
	"net/http"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// TestOneRateLimiterForAllGroups: the speaker's QPS bounds the speaker,
// not each API group's client apart (its four groups would otherwise
// allow four times the rate), and a configured limiter is kept.
func TestOneRateLimiterForAllGroups(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg := shared(&rest.Config{Host: "https://198.51.100.1:6443", QPS: 50, Burst: 100})
	if again := shared(cfg); again.RateLimiter != cfg.RateLimiter {
		t.Error("shared replaced a configured rate limiter")
	}
	var limiters []any
	core, err := groupClient(cfg, codecs, http.DefaultClient, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	coord, err := groupClient(cfg, codecs, http.DefaultClient, "/apis", coordinationv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []rest.Interface{core, coord} {
		rl := c.GetRateLimiter()
		if rl == nil || rl.QPS() != 50 {
			t.Fatalf("group client rate limiter %v: want one at 50/s", rl)
		}
		limiters = append(limiters, rl)
	}
	if limiters[0] != limiters[1] {
		t.Error("the core and coordination clients have rate limiters of their own: want one shared")
	}
	if unlimited := shared(&rest.Config{QPS: -1}); unlimited.RateLimiter != nil {
		t.Error("a negative QPS got a rate limiter")
	}
}
