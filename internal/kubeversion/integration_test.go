package kubeversion

import (
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRealAPIServerIsSupported: the kube-apiserver the tests run (the
// version pinned in hack/versions.env) passes the check.
func TestRealAPIServerIsSupported(t *testing.T) {
	kube, err := kubernetes.NewForConfig(testenv.Shared(t).AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckServer(kube.Discovery()); err != nil {
		t.Fatal(err)
	}
}
