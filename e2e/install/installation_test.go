package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/nodewrites"
	"github.com/herald-lb/herald/test/testenv"
)

// TestSecondInstallationWritesOnlyItsOwn: with the default installation
// and a second release (installation blue, namespace herald-blue)
// applied, the admission policies hold each installation's speakers to
// their own SpeakerStatuses: blue's speaker writes <node>.blue labelled
// blue and nothing of the default's; the default's speaker writes
// nothing of blue's, nor its own labelled as blue's.
func TestSecondInstallationWritesOnlyItsOwn(t *testing.T) {
	const ns, inst = "herald-blue", "blue"
	kubectl(t, "apply", "--server-side", "-f", manifests(t, "herald.yaml"))
	blue := filepath.Join(t.TempDir(), "blue.yaml")
	if err := os.WriteFile(blue, []byte(helmTemplate(t, "herald-blue", ns, "--set", "namespace.create=true", "--set", "installation="+inst,
		"--set", "lbClass=example.com/blue", "--set", "lbClassOnly=true")), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "-f", blue)
	t.Cleanup(func() { kubectl(t, "delete", "-f", blue, "--ignore-not-found", "--wait=false") })
	admin := testenv.Shared(t).AdminConfig
	ctx := context.Background()
	seed(t, admin, "herald-system", "node1")
	seedInstallation(t, admin, ns, inst, "node1")
	speaker := func(ns string) *rest.Config {
		cfg := as(admin, ns, "herald-speaker")
		cfg.Impersonate.Extra = map[string][]string{nodeNameClaim: {"node1"}}
		return cfg
	}
	blueWrites, defaultWrites := nodewrites.SpeakerOfInstallation("node1", inst), nodewrites.DefaultSpeakerBeside("node1", inst)
	deadline := time.Now().Add(30 * time.Second)
	for errs := nodewrites.Run(ctx, speaker(ns), ns, blueWrites[:1], nil); len(errs) > 0; errs = nodewrites.Run(ctx, speaker(ns), ns, blueWrites[:1], nil) {
		if time.Now().After(deadline) {
			t.Fatalf("release herald-blue's policies not in force after 30 s: %v", errs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for who, run := range map[string]struct {
		cfg    *rest.Config
		ns     string
		writes []nodewrites.Write
	}{
		"blue's speaker of node1":  {speaker(ns), ns, blueWrites},
		"default speaker of node1": {speaker("herald-system"), "herald-system", defaultWrites},
		// the renewal of its own liveness Lease, in its own namespace
		"blue's speaker of node1, its Lease": {speaker(ns), ns, nodewrites.Speaker("node1", "node2", "herald-controller")[5:6]},
	} {
		logf := func(format string, args ...any) { t.Logf(who+": "+format, args...) }
		for _, err := range nodewrites.Run(ctx, run.cfg, run.ns, run.writes, logf) {
			t.Errorf("%s: %v", who, err)
		}
	}
}

// helmTemplate renders the chart as release name in namespace ns.
func helmTemplate(t *testing.T, name, ns string, values ...string) string {
	t.Helper()
	helm, err := testenv.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(helm, append([]string{"template", name, filepath.Join(root, "charts", "herald"), "--namespace", ns}, values...)...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return string(out)
}

// seedInstallation creates installation inst's liveness Lease and
// SpeakerStatus of each node in namespace ns (kept if they exist).
func seedInstallation(t *testing.T, admin *rest.Config, ns, inst string, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(admin)
	herald := versioned.NewForConfigOrDie(admin)
	for _, n := range nodes {
		if _, err := herald.HeraldV1beta1().SpeakerStatuses().Create(ctx, &heraldv1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{
			Name: n + "." + inst, Labels: map[string]string{heraldv1.LabelInstallation: inst}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: heraldv1.SpeakerLeasePrefix + n},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: new(n), LeaseDurationSeconds: new(int32(15))}}
		if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
