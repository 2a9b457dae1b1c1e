package lean_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSpeakerLinksNoClientset: the speaker binary must not import
// client-go's clientset, informers, discovery client or scheme of every
// built-in kind (the reason this package exists). Any of them links all
// of Kubernetes' API groups back in.
func TestSpeakerLinksNoClientset(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the speaker's dependencies")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-tags=grpcnotrace", "github.com/herald-lb/herald/speaker").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: %s", len(deps), out)
	}
	for _, d := range deps {
		switch {
		case d == "k8s.io/client-go/kubernetes", d == "k8s.io/client-go/kubernetes/scheme",
			d == "k8s.io/client-go/informers", d == "k8s.io/client-go/discovery",
			strings.HasPrefix(d, "k8s.io/client-go/kubernetes/typed/"),
			strings.HasPrefix(d, "k8s.io/api/apps/"),
			strings.HasPrefix(d, "github.com/herald-lb/herald/api/generated/clientset/"),
			strings.HasPrefix(d, "github.com/herald-lb/herald/api/generated/informers/"):
			t.Errorf("the speaker imports %s", d)
		}
	}
}
