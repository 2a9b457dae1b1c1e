package install

import (
	"context"
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

// nodeNameClaim is the user extra in which the API server carries the
// node a pod-bound service-account token was issued for.
const nodeNameClaim = "authentication.kubernetes.io/node-name"

// TestEachNodeWritesOnlyItsOwn: with the manifests applied, the
// admission policies hold each identity to its own objects. Impersonated
// here (the speaker's account with node1's node-name claim, without any
// claim, the controller's account, an admin); the L2 lab test does the
// same with the tokens Herald's pods hold.
func TestEachNodeWritesOnlyItsOwn(t *testing.T) {
	kubectl(t, "apply", "--server-side", "-f", manifests(t, "herald.yaml"))
	admin := testenv.Shared(t).AdminConfig
	const ns = "herald-system"
	ctx := context.Background()
	seed(t, admin, ns, "node1", "node2")
	speaker := func(node string) *rest.Config {
		cfg := as(admin, ns, "herald-speaker")
		if node != "" {
			cfg.Impersonate.Extra = map[string][]string{nodeNameClaim: {node}}
		}
		return cfg
	}
	// The policies take effect a moment after they are created: wait
	// until each refuses its first write.
	inForce := func() []error {
		return append(nodewrites.Run(ctx, speaker("node1"), ns, nodewrites.Speaker("node1", "node2", "herald-controller")[:1], nil),
			nodewrites.Run(ctx, as(admin, ns, "herald-controller"), ns, nodewrites.Controller("node1", "herald-controller")[:1], nil)...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for errs := inForce(); len(errs) > 0; errs = inForce() {
		if time.Now().After(deadline) {
			t.Fatalf("the policies not in force after 30 s: %v", errs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, run := range []struct {
		who    string
		cfg    *rest.Config
		writes []nodewrites.Write
	}{
		{"speaker of node1", speaker("node1"), nodewrites.Speaker("node1", "node2", "herald-controller")},
		{"speaker of node2", speaker("node2"), nodewrites.Speaker("node2", "node1", "herald-controller")},
		{"speaker without a claim", speaker(""), nodewrites.SpeakerWithoutClaim("node1")},
		{"controller", as(admin, ns, "herald-controller"), nodewrites.Controller("node1", "herald-controller")},
		{"operator (cluster admin)", admin, nodewrites.Operator()},
	} {
		logf := func(format string, args ...any) { t.Logf(run.who+": "+format, args...) }
		for _, err := range nodewrites.Run(ctx, run.cfg, ns, run.writes, logf) {
			t.Errorf("%s: %v", run.who, err)
		}
	}
}

// as impersonates a ServiceAccount of ns.
func as(admin *rest.Config, ns, sa string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}

// seed creates what the writes act on: the leader Lease, the nodes'
// liveness Leases and SpeakerStatuses (kept if they exist).
func seed(t *testing.T, admin *rest.Config, ns string, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(admin)
	herald := versioned.NewForConfigOrDie(admin)
	leases := []*coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Name: "herald-controller"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new("herald-controller-0")}}}
	for _, n := range nodes {
		leases = append(leases, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: heraldv1.SpeakerLeasePrefix + n},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: new(n), LeaseDurationSeconds: new(int32(15))}})
		if _, err := herald.HeraldV1beta1().SpeakerStatuses().Create(ctx, &heraldv1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: n}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, l := range leases {
		if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
