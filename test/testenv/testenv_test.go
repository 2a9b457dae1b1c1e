package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) { Main(m) }

func TestControlPlaneServesAndHasCRDs(t *testing.T) {
	cp := Shared(t)
	cs, err := kubernetes.NewForConfig(cp.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := ReadVersions(mustRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != vs.Kubernetes {
		t.Errorf("server version %s, want the pinned %s", v.GitVersion, vs.Kubernetes)
	}
	res, err := cs.Discovery().ServerResourcesForGroupVersion("herald.dev/v1beta1")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res.APIResources {
		got[r.Kind] = true
	}
	for _, k := range []string{"IPAddressPool", "L2Advertisement", "BGPPeer", "BGPAdvertisement", "Community", "BFDProfile"} {
		if !got[k] {
			t.Errorf("kind %s not served", k)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default namespace: %v", err)
	}
}

func mustRoot(t *testing.T) string {
	t.Helper()
	r, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
