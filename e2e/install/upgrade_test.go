package install

import "testing"

// TestServerSideApplyOverClientSideApply: an install made with a plain
// `kubectl apply` (client-side; the script of `kubectl herald migrate
// --plan` applies manifests/rbac/ so) upgrades with `kubectl apply
// --server-side` without conflicts. An atomic field the manifests leave
// to the API server's defaults (the admission policies' matchConstraints)
// conflicts with the client-side manager.
func TestServerSideApplyOverClientSideApply(t *testing.T) {
	kubectl(t, "delete", "--ignore-not-found", "-f", manifests(t, "rbac", "admission.yaml"), "-f", manifests(t, "policies.yaml"))
	kubectl(t, "apply", "-f", manifests(t, "namespace.yaml"), "-f", manifests(t, "rbac"), "-f", manifests(t, "policies.yaml"))
	kubectl(t, "apply", "--server-side", "--field-manager=herald-upgrade", "-f", manifests(t, "herald.yaml"))
}
