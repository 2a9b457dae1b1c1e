package k8s

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://198.51.100.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

// TestClientRateLimit: a negative QPS leaves the client without a rate
// limiter (the controller's default), zero means 200/400, a positive QPS
// is kept.
func TestClientRateLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		qps     float32
		burst   int
		limited bool
		wantQPS float32
	}{
		{-1, 1000, false, -1},
		{0, 0, true, 200},
		{50, 100, true, 50},
	} {
		cfg, err := RESTConfig(ClientOptions{Kubeconfig: path, QPS: tc.qps, Burst: tc.burst})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.QPS != tc.wantQPS {
			t.Errorf("QPS %g: config QPS %g, want %g", tc.qps, cfg.QPS, tc.wantQPS)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rl := cs.CoreV1().RESTClient().(*rest.RESTClient).GetRateLimiter()
		if (rl != nil) != tc.limited {
			t.Errorf("QPS %g: rate limiter %v, want one: %v", tc.qps, rl, tc.limited)
		}
		if rl != nil && rl.QPS() != tc.wantQPS {
			t.Errorf("QPS %g: limiter at %g/s, want %g", tc.qps, rl.QPS(), tc.wantQPS)
		}
	}
}
