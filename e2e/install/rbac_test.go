package install

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/test/testenv"
)

type access struct {
	group, resource, sub, verb, ns string
	allowed                        bool
}

func allow(group, resource, sub, verb, ns string) access {
	return access{group, resource, sub, verb, ns, true}
}
func deny(group, resource, sub, verb, ns string) access {
	return access{group, resource, sub, verb, ns, false}
}

// TestRBACIsLeastPrivilege asks the API server (SubjectAccessReview) what
// each ServiceAccount may do: what the design needs is allowed, and a
// table of things it does not need is refused. Which Lease and which
// SpeakerStatus an allowed write may touch, admission decides
// (TestEachNodeWritesOnlyItsOwn).
func TestRBACIsLeastPrivilege(t *testing.T) {
	kubectl(t, "apply", "--server-side", "-f", manifests(t, "herald.yaml"))
	cs := kubernetes.NewForConfigOrDie(testenv.Shared(t).AdminConfig)
	const ns = "herald-system"
	checks := map[string][]access{
		"herald-controller": {
			allow("", "services", "", "watch", ""), allow("", "services", "status", "update", "default"),
			deny("", "services", "status", "patch", "default"), allow("", "services", "", "patch", "default"), allow("", "events", "", "create", "default"),
			allow("herald.dev", "ipaddresspools", "status", "patch", ""), allow("herald.dev", "ipaddresspools", "", "patch", ""),
			allow("coordination.k8s.io", "leases", "", "update", ns), allow("", "secrets", "", "create", ns),
			allow("", "nodes", "", "list", ""), allow("discovery.k8s.io", "endpointslices", "", "watch", ""),
			deny("", "services", "", "delete", "default"), deny("", "services", "", "update", "default"),
			deny("", "services", "", "create", "default"), deny("", "pods", "", "list", ""),
			deny("", "secrets", "", "get", "default"), deny("", "secrets", "", "delete", ns),
			deny("", "nodes", "", "patch", ""), deny("herald.dev", "ipaddresspools", "", "delete", ""),
			deny("herald.dev", "ipaddresspools", "", "create", ""), deny("herald.dev", "bgppeers", "", "update", ""),
			deny("coordination.k8s.io", "leases", "", "update", "kube-system"), deny("rbac.authorization.k8s.io", "clusterroles", "", "create", ""),
			deny("", "configmaps", "", "get", ns),
			// Leases: its leader Lease (admission refuses the speakers'
			// and the hold, TestEachNodeWritesOnlyItsOwn); never delete.
			allow("coordination.k8s.io", "leases", "", "create", ns), deny("coordination.k8s.io", "leases", "", "delete", ns),
			// SpeakerStatuses: read only.
			allow("herald.dev", "speakerstatuses", "", "watch", ""), deny("herald.dev", "speakerstatuses", "", "create", ""),
			deny("herald.dev", "speakerstatuses", "", "update", ""), deny("herald.dev", "speakerstatuses", "", "delete", ""),
		},
		"herald-speaker": {
			allow("", "services", "", "watch", ""), allow("discovery.k8s.io", "endpointslices", "", "list", ""),
			allow("", "nodes", "", "get", ""), allow("", "events", "", "create", "default"),
			allow("herald.dev", "bgppeers", "", "watch", ""), allow("", "secrets", "", "watch", ns),
			deny("", "services", "status", "patch", "default"), deny("", "services", "status", "update", "default"),
			deny("", "services", "", "patch", "default"),
			deny("", "secrets", "", "get", "default"), deny("", "secrets", "", "create", ns),
			deny("herald.dev", "ipaddresspools", "status", "patch", ""), deny("herald.dev", "ipaddresspools", "", "patch", ""),
			allow("coordination.k8s.io", "leases", "", "update", ns), allow("coordination.k8s.io", "leases", "", "get", ns), allow("coordination.k8s.io", "leases", "", "watch", ns),
			deny("coordination.k8s.io", "leases", "", "update", "kube-system"), deny("", "nodes", "", "patch", ""),
			deny("", "pods", "", "list", ""), deny("", "namespaces", "", "list", ""),
			// Its own liveness Lease and SpeakerStatus: RBAC cannot name
			// one per node, admission holds each speaker to its own
			// (TestEachNodeWritesOnlyItsOwn). A SpeakerStatus goes with
			// its Node (garbage collection), never deleted by a speaker.
			allow("coordination.k8s.io", "leases", "", "create", ns), allow("coordination.k8s.io", "leases", "", "delete", ns),
			deny("coordination.k8s.io", "leases", "", "create", "default"),
			allow("herald.dev", "speakerstatuses", "", "create", ""), allow("herald.dev", "speakerstatuses", "", "update", ""),
			deny("herald.dev", "speakerstatuses", "", "delete", ""), deny("herald.dev", "speakerstatuses", "", "patch", ""),
		},
	}
	for sa, table := range checks {
		for _, a := range table {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + ns + ":" + sa,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: a.group, Resource: a.resource, Subresource: a.sub, Verb: a.verb, Namespace: a.ns,
				},
			}}
			got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != a.allowed {
				t.Errorf("%s %s %s/%s %s in %q: allowed=%v, want %v", sa, a.verb, a.group, a.resource, a.sub, a.ns, got.Status.Allowed, a.allowed)
			}
		}
	}
}
