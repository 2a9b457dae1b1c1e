// Package metallb holds the end-to-end test of the takeover from MetalLB,
// in the lab: a real MetalLB v0.16.2 (built from the Go module proxy by
// hack/build-metallb.sh, installed from its own metallb-native.yaml) serves
// Services in L2 mode; then `kubectl herald migrate` converts its
// configuration and its --plan script replaces MetalLB with Herald, while
// the client probes every address.
package metallb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-lb/herald/e2e/lab"
	"github.com/herald-lb/herald/test/labkit"
	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { lab.Main(m, lab.Options{Nodes: 3}) }

// MetalLB's names in metallb-native.yaml.
const (
	metallbNS         = "metallb-system"
	metallbWebhook    = "metallb-webhook-configuration"
	metallbController = "deployment/controller"
	metallbSpeaker    = "daemonset/speaker"
)

// metallbBuild is what hack/build-metallb.sh made.
type metallbBuild struct {
	Dir      string
	Manifest string
	Tarballs []string
}

func buildMetalLB(t *testing.T) metallbBuild {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-metallb.sh"))
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/build-metallb.sh: %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		t.Fatalf("hack/build-metallb.sh printed no directory\n%s", stderr.String())
	}
	dir := lines[len(lines)-1]
	return metallbBuild{
		Dir:      dir,
		Manifest: filepath.Join(dir, "metallb-native.yaml"),
		Tarballs: []string{filepath.Join(dir, "images", "controller.tar"), filepath.Join(dir, "images", "speaker.tar")},
	}
}

// installMetalLB imports MetalLB's images into every node and installs it
// as its documentation says: metallb-native.yaml applied unedited, then
// the memberlist Secret (the controller would create it too; making it
// first lets the speakers start at once).
//
// MetalLB validates its objects with a webhook served by its controller
// behind the Service metallb-webhook-service. The lab's API server runs in
// the root namespace, which has no kube-proxy and no route to Service or
// pod addresses, so it cannot call the webhook; the configuration is
// deleted, as MetalLB's troubleshooting documentation suggests for a
// webhook the API server cannot reach. (The takeover deletes it anyway.)
func installMetalLB(t *testing.T, ctx context.Context, l *lab.Lab, b metallbBuild) {
	t.Helper()
	if err := l.ImportImages(ctx, b.Tarballs...); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Kubectl(ctx, "apply", "-f", b.Manifest); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 64)
	_, _ = rand.Read(key)
	if _, err := l.Kubectl(ctx, "-n", metallbNS, "create", "secret", "generic", "memberlist", "--from-literal=secretkey="+hex.EncodeToString(key)); err != nil {
		if _, getErr := l.Client().CoreV1().Secrets(metallbNS).Get(ctx, "memberlist", metav1.GetOptions{}); getErr != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{metallbController, metallbSpeaker} {
		if _, err := l.Kubectl(ctx, "-n", metallbNS, "rollout", "status", w, "--timeout=300s"); err != nil {
			t.Fatal(err)
		}
	}
	err := l.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, metallbWebhook, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// applyWithRetry applies YAML as the lab's admin, retrying for a while
// (CRDs just established, a webhook configuration just deleted).
func applyWithRetry(t *testing.T, ctx context.Context, l *lab.Lab, file string) {
	t.Helper()
	var last error
	labkit.Eventually(t, time.Minute, "kubectl apply -f "+filepath.Base(file), func() bool {
		_, last = l.Kubectl(ctx, "apply", "-f", file)
		return last == nil
	})
	if last != nil {
		t.Fatal(last)
	}
}
