package l2

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/e2e/deploy"
	"github.com/herald-lb/herald/e2e/nodewrites"
	"github.com/herald-lb/herald/internal/k8s"
)

// TestNodeCredentialsWriteOnlyTheirOwn: with the token the speaker Pod on
// node1 holds (read from its container, as anyone holding node1 could),
// creating the announcement hold, renewing node2's liveness Lease,
// deleting the leader Lease and writing node2's SpeakerStatus are each
// refused with a message saying why; renewing its own Lease and writing
// its own SpeakerStatus are allowed (server-side dry runs). With the
// leading controller's token, no speaker's Lease or SpeakerStatus and no
// hold can be written; its leader Lease can.
func TestNodeCredentialsWriteOnlyTheirOwn(t *testing.T) {
	l, h := suite.Herald(t)
	ctx := context.Background()
	token, err := h.SpeakerToken(ctx, "node1")
	if err != nil {
		t.Fatal(err)
	}
	speaker := l.ControlPlane().TokenConfig(token)
	user := whoAmI(t, speaker)
	t.Logf("node1's speaker token: user %s, node-name claim %v", user.Username, user.Extra["authentication.kubernetes.io/node-name"])
	if user.Username != "system:serviceaccount:"+deploy.Namespace+":herald-speaker" ||
		!slices.Equal(user.Extra["authentication.kubernetes.io/node-name"], []string{"node1"}) {
		t.Fatalf("node1's speaker token authenticates as %+v: want herald-speaker with node1's node-name claim", user)
	}
	for _, err := range nodewrites.Run(ctx, speaker, deploy.Namespace, nodewrites.Speaker("node1", "node2", deploy.LeaseName), prefixed(t, "node1's speaker token")) {
		t.Errorf("node1's speaker token: %v", err)
	}
	token, err = h.ControllerToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range nodewrites.Run(ctx, l.ControlPlane().TokenConfig(token), deploy.Namespace, nodewrites.Controller("node1", deploy.LeaseName), prefixed(t, "the controller's token")) {
		t.Errorf("the controller's token: %v", err)
	}
	// Herald's own writes pass: every speaker renews its Lease, and no
	// Herald log (earlier tests of this run included) holds a refusal.
	for _, n := range l.Nodes() {
		lease, err := l.Client().CoordinationV1().Leases(deploy.Namespace).Get(ctx, heraldv1.SpeakerLeasePrefix+n.Name, metav1.GetOptions{})
		if err != nil || !k8s.LeaseFresh(lease, time.Now()) {
			t.Errorf("%s's liveness Lease not fresh (err %v)", n.Name, err)
		}
	}
	logs := h.LogsSince(ctx, time.Now().Add(-time.Hour), 5000)
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "denied request") || strings.Contains(line, "is forbidden") {
			t.Errorf("Herald refused its own write: %s", line)
		}
	}
}

// prefixed logs to t, each line starting with who.
func prefixed(t *testing.T, who string) func(string, ...any) {
	return func(format string, args ...any) { t.Logf(who+": "+format, args...) }
}

// whoAmI is the user the API server authenticates cfg as.
func whoAmI(t *testing.T, cfg *rest.Config) authenticationv1.UserInfo {
	t.Helper()
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(context.Background(),
		&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo
}
